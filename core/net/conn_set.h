// conn_set.h — the open connections of a server, each under an id, so that a
// message for one (a BOT-M link's fetch) or for all (overload, stop) finds them.
// THREADS: thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace lcc::net {

// The open connections of a server, each with an id: thread-safe. A connection leaves
// the set through the `on_closed` callback it was made with.
template <typename Conn>
class ConnSet {
 public:
  using Id = std::uint64_t;

  // `make(id)` builds the connection; it is kept (weakly) under `id`, and only then
  // `start(conn, on_closed)` lets it read: whatever it reads can already be answered
  // through find(id) (a BOT-M's hello makes the QM send fetches on that link at once).
  template <typename Make, typename Start>
  std::shared_ptr<Conn> add(Make make, Start start) {
    Id id;
    {
      std::lock_guard<std::mutex> lk(state_->mu);
      id = state_->next_id++;
    }
    std::shared_ptr<Conn> c = make(id);
    {
      std::lock_guard<std::mutex> lk(state_->mu);
      state_->conns[id] = c;
    }
    std::weak_ptr<State> weak = state_;
    start(*c, [weak, id] {
      if (auto s = weak.lock()) {
        std::lock_guard<std::mutex> lk(s->mu);
        s->conns.erase(id);
      }
    });
    return c;
  }
  std::shared_ptr<Conn> find(Id id) const {
    std::lock_guard<std::mutex> lk(state_->mu);
    auto it = state_->conns.find(id);
    return it == state_->conns.end() ? nullptr : it->second.lock();
  }
  std::vector<std::shared_ptr<Conn>> all() const {
    std::vector<std::shared_ptr<Conn>> out;
    std::lock_guard<std::mutex> lk(state_->mu);
    for (auto& [id, w] : state_->conns) {
      if (auto c = w.lock()) out.push_back(std::move(c));
    }
    return out;
  }
  std::size_t size() const {
    std::lock_guard<std::mutex> lk(state_->mu);
    return state_->conns.size();
  }

 private:
  struct State {
    std::mutex mu;
    std::map<Id, std::weak_ptr<Conn>> conns;
    Id next_id = 1;
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace lcc::net
