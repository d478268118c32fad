// address_slots.h — connection counts in total and per source address, with a token
// per admitted connection that gives its place back when the connection lets it go.
// An Acceptor counts its connections with one; a UNS counts the CPs its trusted
// proxies carry (by the address their PROXY header names) with another.
// THREADS: thread-safe; a token may be released on any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace lcc::net {

enum class Admission : std::uint8_t { kAdmitted, kTooManyConnections, kTooManyFromAddress, kTooFewDescriptors };
std::string_view admissionName(Admission admission);

class AddressSlots : public std::enable_shared_from_this<AddressSlots> {
 public:
  // One more connection from `address`, unless `max_total` or `max_per_address` (0: no
  // limit) is reached; `token` (admitted only) holds the place until its last copy goes.
  Admission admit(const std::string& address, std::size_t max_total, std::size_t max_per_address,
                  std::shared_ptr<void>* token);
  std::size_t total() const;

 private:
  mutable std::mutex mu_;
  std::size_t total_ = 0;
  std::map<std::string, std::size_t> per_address_;
};

}  // namespace lcc::net
