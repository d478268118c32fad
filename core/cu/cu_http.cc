#include "cu/cu_http.h"

#include <spdlog/spdlog.h>

namespace lcc::cu {
namespace {

http::Response rejected(int status, ErrorCode code, const std::string& message) {
  http::Response r;
  r.status = status;
  r.content_type = "application/xml";
  r.body = proto::formatQueryRejected(code, message);
  return r;
}

}  // namespace

http::Response handleCuQuery(QueryEngine& engine, const http::Request& request) {
  proto::CuQueryError error;
  auto query = proto::parseCuQueryParams(request.query, &error);
  if (!query) {
    engine.stats().rejected.inc();
    return rejected(400, error.code, error.message);
  }
  auto prepared = engine.prepare(*query);
  if (!prepared.isOk()) {
    const Status& s = prepared.status();
    const QueryRefusal why = refusalFor(s);
    if (why.code == ErrorCode::kInternal) {
      spdlog::error("cu: http query from {} failed: {}", request.remote_ip, s.toString());
      engine.stats().rejected.inc();
    }
    return rejected(why.http_status, why.code, s.message());
  }
  std::shared_ptr<PreparedExport> p = std::move(prepared).value();
  http::Response r;
  r.status = 200;
  r.content_type = std::string(p->exporter().contentType());
  r.headers.emplace_back("X-LCC-Count", std::to_string(p->header().count));
  r.headers.emplace_back("X-LCC-Last-Seq", std::to_string(p->header().last_seq));
  r.headers.emplace_back("Cache-Control", "no-store");
  if (p->exporter().format() != "xml") {
    r.headers.emplace_back("Content-Disposition",
                           "attachment; filename=\"lcc-export." + std::string(p->exporter().format()) + "\"");
  }
  std::string who = request.remote_ip;
  r.stream = [p, who](ByteSink& sink) {
    Status s = p->stream(sink);
    if (!s.isOk()) spdlog::warn("cu: http answer to {} ended early: {}", who, s.toString());
    return s;
  };
  return r;
}

void addCuRoutes(http::Router& router, QueryEngine& engine) {
  router.add("GET", "/cu/query", [&engine](const http::Request& req) { return handleCuQuery(engine, req); });
}

}  // namespace lcc::cu
