#include "cu/cu_http.h"

#include <spdlog/spdlog.h>

#include "cu/merged_export.h"
#include "cu/merged_query.h"

namespace lcc::cu {
namespace {

http::Response rejected(int status, ErrorCode code, const std::string& message) {
  http::Response r;
  r.status = status;
  r.content_type = "application/xml";
  r.body = proto::formatQueryRejected(code, message);
  return r;
}

// A failed prepare() or merge as its HTTP status and query_rejected body.
http::Response refused(QueryEngine& engine, const Status& s, const std::string& who) {
  const QueryRefusal why = refusalFor(s);
  if (why.code == ErrorCode::kInternal) {
    spdlog::error("cu: http query from {} failed: {}", who, s.toString());
    engine.stats().rejected.inc();
  }
  return rejected(why.http_status, why.code, s.message());
}

void addDisposition(http::Response& r, const Exporter& e) {
  if (e.format() != "xml") {
    r.headers.emplace_back("Content-Disposition",
                           "attachment; filename=\"lcc-export." + std::string(e.format()) + "\"");
  }
}

http::Response mergedAnswer(QueryEngine& engine, const PeerOptions& peers, const proto::CuQuery& q,
                            const http::Request& request) {
  Exporter* exporter = engine.exporterFor(q.format);
  if (exporter == nullptr) {  // the same refusal as one LCC's (known formats named)
    auto p = engine.prepare(q);
    return refused(engine, p.isOk() ? Status::invalidArgument("unknown format") : p.status(), request.remote_ip);
  }
  auto merged = runMergedQuery(q, &engine, peers, engine.options().default_limit);
  if (!merged.isOk()) return refused(engine, merged.status(), request.remote_ip);
  const MergedResult& m = *merged;
  for (const auto& u : m.answer.unreachable) spdlog::warn("cu: merged answer to {} without {}", request.remote_ip, u);
  http::Response r;
  r.status = 200;
  r.content_type = std::string(exporter->contentType());
  r.headers.emplace_back("X-LCC-Count", std::to_string(m.answer.records.size()));
  r.headers.emplace_back("X-LCC-Last-Seq", m.token);
  std::string sources;
  for (const auto& [id, where] : m.answer.sources) sources += (sources.empty() ? "" : ", ") + id + "=" + where;
  r.headers.emplace_back("X-LCC-Sources", sources);
  r.headers.emplace_back("X-LCC-Peers-Unreachable", std::to_string(m.answer.unreachable.size()));
  r.headers.emplace_back("Cache-Control", "no-store");
  addDisposition(r, *exporter);
  EngineStats& stats = engine.stats();
  stats.queries.inc();
  stats.records.inc(m.answer.records.size());
  MergedExportOptions o{engine.options().machine_id, engine.options().temp_dir, engine.options().remote,
                        &stats.content_bytes, &stats.content_missing};
  o.remote.tls = peers.tls;  // peers' content goes where their answers came from
  auto exp = std::make_shared<MergedExport>(std::move(merged).value(), *exporter, q.content, &engine, std::move(o));
  std::string who = request.remote_ip;
  r.stream = [exp, who, &stats](ByteSink& sink) {
    stats.running.add(1);
    Status s = exp->stream(sink);
    stats.running.add(-1);
    if (!s.isOk()) {
      stats.failed.inc();
      spdlog::warn("cu: merged http answer to {} ended early: {}", who, s.toString());
    }
    return s;
  };
  return r;
}

}  // namespace

http::Response handleCuQuery(QueryEngine& engine, const PeerOptions& peers, const http::Request& request) {
  proto::CuQueryError error;
  auto query = proto::parseCuQueryParams(request.query, &error);
  if (!query) {
    engine.stats().rejected.inc();
    return rejected(400, error.code, error.message);
  }
  auto own_only = request.query.find("peers");
  if (!peers.peers.empty() && (own_only == request.query.end() || own_only->second != "no")) {
    return mergedAnswer(engine, peers, *query, request);
  }
  auto prepared = engine.prepare(*query);
  if (!prepared.isOk()) return refused(engine, prepared.status(), request.remote_ip);
  std::shared_ptr<PreparedExport> p = std::move(prepared).value();
  http::Response r;
  r.status = 200;
  r.content_type = std::string(p->exporter().contentType());
  r.headers.emplace_back("X-LCC-Count", std::to_string(p->header().count));
  r.headers.emplace_back("X-LCC-Last-Seq", std::to_string(p->header().last_seq));
  r.headers.emplace_back("X-LCC-Since", std::to_string(p->since()));
  if (auto id = engine.storeId(); id.isOk() && *id) r.headers.emplace_back("X-LCC-Source", **id);
  r.headers.emplace_back("Cache-Control", "no-store");
  addDisposition(r, p->exporter());
  std::string who = request.remote_ip;
  r.stream = [p, who](ByteSink& sink) {
    Status s = p->stream(sink);
    if (!s.isOk()) spdlog::warn("cu: http answer to {} ended early: {}", who, s.toString());
    return s;
  };
  return r;
}

void addCuRoutes(http::Router& router, QueryEngine& engine, const PeerOptions& peers) {
  router.add("GET", "/cu/query",
             [&engine, &peers](const http::Request& req) { return handleCuQuery(engine, peers, req); });
  router.add("GET", "/cu/content/", [&engine](const http::Request& req) { return handleRecordContent(engine, req); });
}

}  // namespace lcc::cu
