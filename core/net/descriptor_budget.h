// descriptor_budget.h — the process-wide budget of connection descriptors (issue 25).
//
// Every listener of the process (core/net's Acceptor, and the HTTP server's own Beast
// acceptor through the same call) asks admit() for each accepted descriptor. It says no
// when fewer than `reserve` descriptors of RLIMIT_NOFILE would be left, so the stores,
// the journals, the spool and the content files always find a descriptor: running out
// is an overload on the ports (the connection is closed at once), never a store failure.
//
// Two measures, either refuses: the connection descriptors the budget holds (across
// every listener), and the accepted descriptor's number (descriptors are numbered
// lowest-free first, so number N means N descriptors are open, whoever opened them).
// And one share: no peer address holds more than a quarter of the usable descriptors
// (limit - reserve), whatever ports it spreads over, so the per-port limits of one
// address cannot add up to the whole budget and lock every other client out.
// THREADS: every call is thread-safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace lcc::net {

class DescriptorBudget {
 public:
  static constexpr std::size_t kDefaultReserve = 96;
  static constexpr std::size_t kMinReserve = 16;
  static constexpr std::size_t kAddressShare = 4;  // one address: at most usable / 4

  // limit 0: RLIMIT_NOFILE's soft limit of this process.
  explicit DescriptorBudget(std::size_t limit = 0, std::size_t reserve = kDefaultReserve);

  // The one of the process (net.reserved_descriptors sets its reserve at start).
  static DescriptorBudget& process();

  // The reserve, bounded to [kMinReserve, limit / 4]; returns what was taken.
  std::size_t setReserve(std::size_t reserve);

  // THE call: `fd` is the descriptor just accepted (its peer address is read from it;
  // a descriptor without one, e.g. a unix socket, has no address share). A token that
  // holds its place until it is destroyed (give it to the connection), or null: the
  // caller closes `fd` at once and answers nothing (an answer would spend the reserve).
  std::shared_ptr<void> admit(int fd);
  // The same for a descriptor whose peer the caller names ("" for none): for tests.
  std::shared_ptr<void> admit(int fd, const std::string& address);

  std::size_t limit() const { return limit_; }
  std::size_t reserve() const { return reserve_.load(); }
  std::size_t open() const { return open_->load(); }         // connection descriptors held
  std::uint64_t refused() const { return refused_.load(); }  // admit() said no
  std::size_t addressShare() const;                          // the most one address holds

 private:
  const std::size_t limit_;
  std::atomic<std::size_t> reserve_;
  struct PerAddress {
    std::mutex mu;
    std::map<std::string, std::size_t> held;  // peer address bytes -> places it holds
  };
  std::shared_ptr<std::atomic<std::size_t>> open_;  // shared with the tokens
  std::shared_ptr<PerAddress> per_address_;         // shared with the tokens
  std::atomic<std::uint64_t> refused_{0};
};

}  // namespace lcc::net
