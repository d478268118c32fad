#include "net/address_ranges.h"

#include <arpa/inet.h>

#include <optional>

namespace lcc::net {
namespace {

struct Address {
  bool v6 = false;
  std::array<std::uint8_t, 16> bytes{};
};

std::optional<Address> parseAddress(std::string text) {
  if (text.rfind("::ffff:", 0) == 0 && text.find('.') != std::string::npos) text = text.substr(7);
  Address a;
  if (::inet_pton(AF_INET, text.c_str(), a.bytes.data()) == 1) return a;
  a.v6 = true;
  if (::inet_pton(AF_INET6, text.c_str(), a.bytes.data()) == 1) return a;
  return std::nullopt;
}

}  // namespace

Result<AddressRanges> AddressRanges::parse(const std::vector<std::string>& entries) {
  AddressRanges out;
  for (const std::string& e : entries) {
    const auto slash = e.find('/');
    auto a = parseAddress(e.substr(0, slash));
    if (!a) return Status::invalidArgument(e + ": not an IP address or CIDR range");
    Range r;
    r.v6 = a->v6;
    r.bytes = a->bytes;
    const int bits = a->v6 ? 128 : 32;
    r.prefix = bits;
    if (slash != std::string::npos) {
      const std::string p = e.substr(slash + 1);
      if (p.empty() || p.size() > 3 || p.find_first_not_of("0123456789") != std::string::npos || std::stoi(p) > bits) {
        return Status::invalidArgument(e + ": the prefix length must be 0-" + std::to_string(bits));
      }
      r.prefix = std::stoi(p);
    }
    out.ranges_.push_back(r);
  }
  return out;
}

bool AddressRanges::contains(const std::string& address) const {
  const auto a = parseAddress(address);
  if (!a) return false;
  for (const Range& r : ranges_) {
    if (r.v6 != a->v6) continue;
    int left = r.prefix;
    bool match = true;
    for (std::size_t i = 0; left > 0 && match; ++i, left -= 8) {
      const std::uint8_t mask = left >= 8 ? 0xff : static_cast<std::uint8_t>(0xff << (8 - left));
      match = (r.bytes[i] & mask) == (a->bytes[i] & mask);
    }
    if (match) return true;
  }
  return false;
}

}  // namespace lcc::net
