// address_ranges.h — a set of IP addresses and CIDR ranges ("192.0.2.7", "10.0.0.0/8",
// "::1", "2001:db8::/32"), and whether an address is in it; an IPv4-mapped IPv6
// address ("::ffff:192.0.2.7") counts as its IPv4 address. A UNS's
// uns.trusted_proxies (the peers whose PROXY header it reads).
// THREADS: const after parse(): any.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "lcc/status.h"

namespace lcc::net {

class AddressRanges {
 public:
  // Error: the first entry that is no address or range, and why.
  static Result<AddressRanges> parse(const std::vector<std::string>& entries);
  bool contains(const std::string& address) const;
  bool empty() const { return ranges_.empty(); }

 private:
  struct Range {
    bool v6 = false;
    std::array<std::uint8_t, 16> bytes{};
    int prefix = 0;  // leading bits that must match
  };
  std::vector<Range> ranges_;
};

}  // namespace lcc::net
