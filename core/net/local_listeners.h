// local_listeners.h — the in-process listeners of one lccd (issue 28): a role that
// listens on an address (the QM on listen.botm) registers here how it takes a link;
// a role of the same process whose target is that same address (a BOT-M's
// botm.source) connects through local_link.h instead of TCP. No entry (the role runs
// in another process, or node.in_process_links is off): the caller uses TCP.
// Addresses match as written in the configuration (`127.0.0.1:7702`; a `tls://`
// prefix is ignored: nothing leaves the process).
// THREADS: thread-safe.
#pragma once

#include <any>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "net/local_link.h"

namespace lcc::net {

class LocalListeners {
 public:
  LocalListeners(boost::asio::io_context& io, LocalLinkOptions options) : io_(io), options_(options) {}

  // From now on, a connect<In, Out>() to `address` makes a link and hands its end to
  // `accept` (called on the connecting thread; the end is not started yet).
  template <typename Out, typename In>
  void listen(const std::string& address, std::function<void(std::shared_ptr<LocalEnd<Out, In>>)> accept) {
    std::lock_guard<std::mutex> lk(mu_);
    listeners_[key(address)] = std::move(accept);
  }
  void unlisten(const std::string& address) {
    std::lock_guard<std::mutex> lk(mu_);
    listeners_.erase(key(address));
  }
  bool listening(const std::string& address) const {
    std::lock_guard<std::mutex> lk(mu_);
    return listeners_.count(key(address)) > 0;
  }

  // A link to the role listening on `address` in this process, its near end on
  // `strand` (not started); null when none listens there with these message types.
  template <typename Out, typename In>
  std::shared_ptr<LocalEnd<Out, In>> connect(const std::string& address, Strand strand) {
    std::function<void(std::shared_ptr<LocalEnd<In, Out>>)> accept;
    {
      std::lock_guard<std::mutex> lk(mu_);
      auto it = listeners_.find(key(address));
      if (it == listeners_.end()) return nullptr;
      const auto* fn = std::any_cast<std::function<void(std::shared_ptr<LocalEnd<In, Out>>)>>(&it->second);
      if (fn == nullptr) return nullptr;
      accept = *fn;
    }
    auto [near, far] = makeLocalLink<Out, In>(std::move(strand), boost::asio::make_strand(io_), options_);
    accept(std::move(far));
    return near;
  }

  const LocalLinkOptions& options() const { return options_; }

 private:
  static std::string key(const std::string& address) {
    constexpr std::string_view kTls = "tls://";
    return address.rfind(kTls, 0) == 0 ? address.substr(kTls.size()) : address;
  }

  boost::asio::io_context& io_;
  const LocalLinkOptions options_;
  mutable std::mutex mu_;
  std::map<std::string, std::any> listeners_;
};

}  // namespace lcc::net
