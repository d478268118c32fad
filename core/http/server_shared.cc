// server_shared.cc — see server_shared.h.
#include "http/server_shared.h"

#include <algorithm>

namespace lcc::http {

Shared::Shared(const Router* r, ServerOptions o)
    : router(r), options(std::move(o)), limits{options.max_header, options.max_body},
      workers(std::max<std::size_t>(1, options.workers)),
      stream_workers(std::max<std::size_t>(1, options.stream_workers)) {
  if (Metrics* m = options.metrics) {
    requests = &m->counter("lcc_http_requests_total", "HTTP requests handled");
    client_errors = &m->counter("lcc_http_client_errors_total", "HTTP answers 4xx (including 413/431 and 400)");
    server_errors = &m->counter("lcc_http_server_errors_total", "HTTP answers 5xx");
    refused = &m->counter("lcc_http_connections_refused_total",
                          "connections refused beyond http.max_connections or http.max_connections_per_ip");
    refused_per_ip = &m->counter("lcc_http_connections_refused_per_ip_total",
                                 "connections refused beyond http.max_connections_per_ip");
    evicted = &m->counter("lcc_http_idle_evicted_total",
                          "idle connections closed to make room at http.max_connections");
    busy = &m->counter("lcc_http_busy_total",
                       "requests answered 503 beyond http.max_handlers_per_ip or http.max_streams_per_ip");
    streams_cut = &m->counter("lcc_http_streams_cut_total", "streamed answers ended early (client gone or error)");
    open_gauge = &m->gauge("lcc_http_connections_open", "HTTP connections open");
  }
}

void Shared::countStatus(int status) {
  if (requests) requests->inc();
  if (status >= 400 && status < 500 && client_errors) client_errors->inc();
  if (status >= 500 && server_errors) server_errors->inc();
}

void Shared::registerSink(const std::shared_ptr<StreamSink>& sink) {
  std::lock_guard<std::mutex> lock(mu);
  std::erase_if(sinks, [](const std::weak_ptr<StreamSink>& w) { return w.expired(); });
  sinks.push_back(sink);
  if (stopped) sink->fail();
}

void Shared::failAllSinks() {
  std::vector<std::shared_ptr<StreamSink>> live;
  {
    std::lock_guard<std::mutex> lock(mu);
    for (auto& w : sinks) {
      if (auto s = w.lock()) live.push_back(std::move(s));
    }
  }
  for (auto& s : live) s->fail();
}

bool Shared::evictIdle() {
  // Gathered under the lock, looked at after it: the last reference to a connection
  // may be one of these, and its destructor takes `mu`.
  std::vector<std::shared_ptr<ConnBase>> idle;
  {
    std::lock_guard<std::mutex> lock(mu);
    for (auto& [id, weak] : conns) {
      auto c = weak.lock();
      if (c && c->idle_since.load() != 0) idle.push_back(std::move(c));
    }
  }
  std::sort(idle.begin(), idle.end(), [](const auto& a, const auto& b) { return a->idle_since < b->idle_since; });
  for (auto& c : idle) {
    std::uint64_t since = c->idle_since.load();
    // Not chosen twice, and not if it just received bytes.
    if (since == 0 || !c->idle_since.compare_exchange_strong(since, 0)) continue;
    c->closeFromOutside();
    if (evicted) evicted->inc();
    return true;
  }
  return false;
}

}  // namespace lcc::http
