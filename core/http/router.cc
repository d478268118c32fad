#include "http/http_server.h"

namespace lcc::http {

void Router::add(const std::string& method, const std::string& path, Handler handler) {
  routes_.push_back({method, path, std::move(handler), false});
}

void Router::addExact(const std::string& method, const std::string& path, Handler handler) {
  routes_.push_back({method, path, std::move(handler), true});
}

Response Router::dispatch(const Request& req) const {
  const Route* best = nullptr;
  bool path_known = false;
  for (const auto& r : routes_) {
    bool match = r.path == req.path ||
                 (!r.exact && !r.path.empty() && r.path.back() == '/' && req.path.compare(0, r.path.size(), r.path) == 0);
    if (!match) continue;
    path_known = true;
    if (r.method != req.method && !(r.method == "GET" && req.method == "HEAD")) continue;
    if (best == nullptr || r.path.size() > best->path.size()) best = &r;
  }
  if (best != nullptr) return best->handler(req);
  if (path_known) return Response::text(405, "method not allowed\n");
  return Response::text(404, "not found\n");
}

}  // namespace lcc::http
