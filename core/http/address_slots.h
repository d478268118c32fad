// address_slots.h — what each source address holds of the HTTP server at once: its
// connections, its requests in the handler pool, its streamed answers. Each is bounded
// per address (http.max_connections_per_ip, http.max_handlers_per_ip,
// http.max_streams_per_ip), so one address cannot take what every client shares.
// A Slot is held while the thing it counts lives and released when it is destroyed.
// Memory: one entry per address that holds something now.
// THREADS: thread-safe (one mutex).
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace lcc::http {

class AddressSlots : public std::enable_shared_from_this<AddressSlots> {
 public:
  enum Kind : std::size_t { kConnection = 0, kHandler = 1, kStream = 2 };

  // Move-only; empty when it was refused.
  class Slot {
   public:
    Slot() = default;
    Slot(Slot&& other) noexcept { *this = std::move(other); }
    Slot& operator=(Slot&& other) noexcept;
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    ~Slot() { reset(); }
    explicit operator bool() const { return owner_ != nullptr; }
    void reset();

   private:
    friend class AddressSlots;
    std::shared_ptr<AddressSlots> owner_;
    std::string ip_;
    Kind kind_ = kConnection;
  };

  // A slot of `kind` for `ip`, or an empty one when `ip` holds `limit` already.
  Slot tryAcquire(const std::string& ip, Kind kind, std::size_t limit);
  std::size_t held(const std::string& ip, Kind kind) const;
  std::size_t addresses() const;

 private:
  void release(const std::string& ip, Kind kind);

  mutable std::mutex mu_;
  std::unordered_map<std::string, std::array<std::size_t, 3>> counts_;
};

}  // namespace lcc::http
