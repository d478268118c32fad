#include "front/front_core.h"

#include <spdlog/spdlog.h>

#include "http/url_codec.h"

namespace lcc::front {
namespace {

using nlohmann::json;
using http::Response;

constexpr int kPendingPerPass = 16;
constexpr int kListLimit = 100000;

Response jsonError(int status, const std::string& why) {
  return Response::json(status, json{{"error", why}}.dump() + "\n");
}

// The sub-LCC's answer with its provider id put back as the front end's.
Response rewritten(const http::ClientResponse& r, std::uint64_t local_id, std::uint64_t id, const std::string& lcc) {
  json j = json::parse(r.body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Response::json(r.status, r.body);
  for (const char* key : {"id", "removed"}) {
    if (j.contains(key) && j[key].is_number_unsigned() && j[key].get<std::uint64_t>() == local_id) j[key] = id;
  }
  if (r.status < 300) j["lcc"] = lcc;
  return Response::json(r.status, j.dump(2) + "\n");
}

}  // namespace

FrontCore::FrontCore(FrontOptions options, std::unique_ptr<FrontDb> db, Env* env, Clock* clock)
    : opt_(std::move(options)), db_(std::move(db)), client_(env, opt_.request_timeout), clock_(clock),
      cache_(opt_.cache_entries, opt_.cache_ttl),
      mover_(opt_, *db_, client_, clock_, [this](std::uint64_t id) { cache_.erase(id); }) {
  for (const auto& l : opt_.lccs) loads_[l.name].name = l.name;
}

std::optional<LccSpec> FrontCore::spec(const std::string& name) const {
  for (const auto& l : opt_.lccs) {
    if (l.name == name) return l;
  }
  return std::nullopt;
}

std::vector<LccLoad> FrontCore::loads() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<LccLoad> out;
  for (const auto& [name, l] : loads_) out.push_back(l);
  return out;
}

void FrontCore::refreshLoads() {
  auto rows = db_->lccs();  // the state ('open' / 'closed') is the FEDB's: an operator may close one
  for (const auto& l : opt_.lccs) {
    bool open = true;
    if (rows.isOk()) {
      for (const auto& r : rows.value()) {
        if (r.spec.name == l.name) open = r.open;
      }
    }
    std::uint64_t placed_before = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      placed_before = loads_[l.name].placed_since;
    }
    auto load = client_.load(l);
    {
      std::lock_guard<std::mutex> lock(mu_);
      LccLoad& mine = loads_[l.name];
      mine.open = open;
      if (load.isOk()) applyRead(mine, load.value().providers, placed_before, clock_->monoNow());
    }
    // The FEDB's copy of the figures, for operators and other front ends (not under mu_).
    if (load.isOk()) {
      (void)db_->recordLoad(l.name, load.value().providers);
    } else {
      spdlog::warn("front: load of {}: {}", l.name, load.status().message());
      (void)db_->recordLoadError(l.name, load.status().message());
    }
  }
}

// One pending row: probe its sub-LCC for the marked provider, then act (placement.h).
void FrontCore::settle(const Mapping& row) {
  const MonoTime now = clock_->monoNow();
  PendingRow pr{row.id, row.lcc, now - Millis(row.age_ms)};
  PendingProbe probe;
  auto where = spec(row.lcc);
  if (where && now - pr.since >= opt_.pending_grace) {
    auto found = client_.findMarked(*where, placementMarker(opt_.schema, row.id));
    probe.asked = found.isOk();
    if (found.isOk()) probe.local_id = found.value();
  }
  switch (decidePending(pr, probe, now, opt_.pending_grace)) {
    case PendingAction::kKeep:
      return;
    case PendingAction::kRemoveThenDrop: {
      auto r = client_.call(*where, "DELETE", "/admin/providers/" + std::to_string(*probe.local_id));
      if (!r.isOk() || (r.value().status >= 300 && r.value().status != 404)) return;  // next pass
      spdlog::info("front: pending provider {}: removed its half-made provider {} from {}", row.id,
                   *probe.local_id, row.lcc);
      break;
    }
    case PendingAction::kDrop:
      break;
  }
  if (Status s = db_->drop(row.id); !s.isOk()) spdlog::warn("front: pending provider {}: {}", row.id, s.message());
  else spdlog::info("front: pending provider {} on {} cleaned", row.id, row.lcc);
}

void FrontCore::cleanPending() {
  auto rows = db_->pending(kPendingPerPass);
  if (!rows.isOk()) return spdlog::warn("front: pending rows: {}", rows.status().message());
  for (const auto& row : rows.value()) settle(row);
}

// The reserve in the provider's slot: its holder's, or the least loaded live one's.
AddFlow::Action FrontCore::reserve(AddFlow& flow) {
  std::optional<SlotChoice> refused;
  auto decide = [&](const std::optional<std::string>& holder) -> Result<std::string> {
    SlotChoice c = chooseForSlot(holder, loads(), clock_->monoNow(), opt_.stale_after);
    if (c.status == 0) return c.lcc;
    refused = c;
    return Status::busy(c.why);
  };
  auto r = db_->reserveInSlot(opt_.slots, decide);
  if (refused) return flow.onNotPlaceable(refused->status, refused->why);
  if (!r.isOk()) return flow.onReserveFailed(r.status().message());
  return flow.onReserved(r.value().id, r.value().lcc);
}

AddFlow::Action FrontCore::create(AddFlow& flow, const http::Request& req, std::string* password) {
  auto where = spec(flow.lcc());
  const std::string form = encodeForm(req.query, "contact") + "&contact=" +
                           http::percentEncode(placementMarker(opt_.schema, flow.globalId()));
  auto r = client_.call(*where, "POST", "/admin/providers", form);
  if (!r.isOk()) return flow.onUnknown(r.status().message());
  const http::ClientResponse& a = r.value();
  if (a.status >= 400 && a.status < 500) return flow.onRefused(a.status, http::errorText(a));
  json j = json::parse(a.body, nullptr, false);
  if (a.status != 201 || j.is_discarded() || !j.contains("id") || !j["id"].is_number_unsigned()) {
    return flow.onUnknown("answered " + std::to_string(a.status) + ": " + http::errorText(a));
  }
  *password = j.value("password", std::string());
  return flow.onCreated(j["id"].get<std::uint64_t>());
}

Response FrontCore::addProvider(const http::Request& req) {
  cleanPending();  // a retry after a failed add finds the rows that add left
  AddFlow flow(choosePlacement(loads(), clock_->monoNow(), opt_.stale_after));
  std::string password;
  for (AddFlow::Action a = flow.start(); a != AddFlow::Action::kAnswer;) {
    switch (a) {
      case AddFlow::Action::kReserve:
        a = reserve(flow);
        break;
      case AddFlow::Action::kCreate:
        a = create(flow, req, &password);
        break;
      case AddFlow::Action::kMarkPlaced: {
        Status s = db_->markPlaced(flow.globalId(), flow.localId());
        a = s.isOk() ? flow.onPlaced() : flow.onPlaceFailed(s.message());
        break;
      }
      case AddFlow::Action::kDropRow:
        if (Status s = db_->drop(flow.globalId()); !s.isOk()) spdlog::warn("front: {}", s.message());
        a = flow.onRowDropped();
        break;
      case AddFlow::Action::kAnswer:
        break;
    }
  }
  if (flow.status() != 201) {
    spdlog::warn("front: provider add from {}: {} {}", req.remote_ip, flow.status(), flow.message());
    return jsonError(flow.status(), flow.message());
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++loads_[flow.lcc()].placed_since;
  }
  spdlog::info("front: provider {} placed on {} (its id there {})", flow.globalId(), flow.lcc(), flow.localId());
  return Response::json(201, json{{"id", flow.globalId()}, {"password", password}, {"lcc", flow.lcc()}}.dump() + "\n");
}

Response FrontCore::listProviders() {
  auto rows = db_->list(kListLimit);
  if (!rows.isOk()) return jsonError(503, rows.status().message());
  json arr = json::array();
  for (const auto& m : rows.value()) {
    const char* state = m.placed ? "placed" : m.moving ? "moving" : "pending";
    arr.push_back({{"id", m.id}, {"lcc", m.lcc}, {"local_id", m.local_id}, {"state", state}, {"slot", slotOf(m.id, opt_.slots)}});
  }
  return Response::json(200, json{{"providers", arr}}.dump(2) + "\n");
}

Response FrontCore::forward(const http::Request& req) {
  static const std::string kBase = "/admin/providers/";
  std::string tail = req.path.substr(kBase.size());
  std::string action;
  if (auto slash = tail.find('/'); slash != std::string::npos) {
    action = tail.substr(slash);
    tail = tail.substr(0, slash);
  }
  auto id = http::parseUnsigned(tail, 0xffffffffull);
  if (!id || *id == 0) return jsonError(400, "provider id must be a positive integer (got " + tail + ")");
  auto row = db_->lookup(*id);
  if (!row.isOk()) return jsonError(503, row.status().message());
  if (!row.value()) return jsonError(404, "no provider " + tail);
  const Mapping& m = *row.value();
  if (!m.placed && !m.moving) return jsonError(409, "provider " + tail + " is being placed (pending on " + m.lcc + ")");
  if (m.moving && req.method != "GET" && req.method != "HEAD") {
    return jsonError(409, "provider " + tail + " is being moved to another sub-LCC (its slot is moving); try again when "
                          "the move ended (lcc front slots)");
  }
  auto where = spec(m.lcc);
  if (!where) return jsonError(503, "provider " + tail + " is on " + m.lcc + ", which front.lccs does not name");
  const std::string method = req.method == "PATCH" ? "POST" : req.method == "HEAD" ? "GET" : req.method;
  std::string path = kBase + std::to_string(m.local_id) + action;
  std::string form;
  if (method == "POST") form = encodeForm(req.query);
  else if (!req.query.empty()) path += "?" + encodeForm(req.query);
  auto r = client_.call(*where, method, path, form);
  if (!r.isOk()) return jsonError(503, r.status().message() + "; try again later");
  if (method == "DELETE" && r.value().status < 300) {
    if (Status s = db_->drop(m.id); !s.isOk()) return jsonError(503, "removed on " + m.lcc + "; PMDB: " + s.message());
    cache_.erase(m.id);
  }
  return rewritten(r.value(), m.local_id, m.id, m.lcc);
}

void FrontCore::status(json& out) const {
  const MonoTime now = clock_->monoNow();
  json arr = json::array();
  for (const auto& l : loads()) {
    arr.push_back({{"name", l.name}, {"open", l.open}, {"live", isLive(l, now, opt_.stale_after)},
                   {"providers", l.providers}, {"placed_since_refresh", l.placed_since}, {"load", loadOf(l)}});
  }
  out["lccs"] = arr;
  out["route_cache_entries"] = cache_.size();
}

Result<std::optional<FrontCore::Target>> FrontCore::route(std::uint64_t id) {
  const MonoTime now = clock_->monoNow();
  std::optional<Route> r = cache_.get(id, now);
  if (!r) {
    auto row = db_->lookup(id);
    if (!row.isOk()) return row.status();
    if (row.value() && row.value()->moving) {  // frozen for a slot move: the CP tries later
      return Status::busy("provider " + std::to_string(id) + " is being moved to another sub-LCC");
    }
    if (!row.value() || !row.value()->placed) return std::optional<Target>();
    r = Route{row.value()->lcc, row.value()->local_id};
    cache_.put(id, *r, now);
  }
  auto where = spec(r->lcc);
  if (!where) {  // a row naming a sub-LCC taken out of front.lccs: the operator's to fix
    return Status::busy("provider " + std::to_string(id) + " is on " + r->lcc + ", which front.lccs does not name");
  }
  Target t{where->uns, r->local_id, where->uns_tls ? where->tls : nullptr, where->tls_name, where->proxy_v2};
  return std::optional<Target>(std::move(t));
}

Response FrontCore::listSlots() {
  auto rows = db_->slotRows(opt_.slots);
  if (!rows.isOk()) return jsonError(503, rows.status().message());
  auto moves = db_->moves(kListLimit);
  if (!moves.isOk()) return jsonError(503, moves.status().message());
  json held = json::array();
  for (const auto& r : rows.value()) {
    held.push_back({{"slot", r.slot}, {"lcc", r.lcc}, {"epoch", r.epoch}, {"providers", r.providers},
                    {"moving", r.moving}, {"elsewhere", r.elsewhere}});
  }
  json mv = json::array();
  for (const auto& m : moves.value()) {
    mv.push_back({{"provider", m.provider}, {"slot", m.slot}, {"from", m.src}, {"to", m.dst}, {"phase", m.phase}});
  }
  return Response::json(200, json{{"slots", opt_.slots}, {"held", held}, {"moves", mv}}.dump(2) + "\n");
}

Response FrontCore::moveSlot(const http::Request& req) {
  static const std::string kBase = "/admin/slots/";
  std::string tail = req.path.substr(kBase.size());
  const auto slash = tail.find('/');
  if (slash == std::string::npos || tail.substr(slash) != "/move") return jsonError(404, "no such admin resource");
  auto slot = http::parseUnsigned(tail.substr(0, slash), opt_.slots - 1);
  if (!slot) return jsonError(400, "slot must be 0 to " + std::to_string(opt_.slots - 1) + " (got " + tail.substr(0, slash) + ")");
  const std::string to = req.param("to");
  if (!spec(to)) return jsonError(400, "to must name a sub-LCC of front.lccs (got " + to + ")");
  const auto n = static_cast<std::uint32_t>(*slot);
  auto planned = db_->startMove(opt_.slots, n, to);
  if (!planned.isOk()) {
    const StatusCode c = planned.status().code();
    return jsonError(c == StatusCode::kNotFound ? 404 : c == StatusCode::kBusy ? 409 : 503, planned.status().message());
  }
  spdlog::info("front: slot {} given to {} ({} provider move(s)) by {}", n, to, planned.value(), req.remote_ip);
  SlotMover::Pass pass = mover_.run(n);
  json out{{"slot", n}, {"to", to}, {"moved", pass.moved}, {"left", pass.left}};
  // The move thread, or another front end sharing the PMDB (held_elsewhere), holds the
  // moves; it carries them on.
  if (pass.busy || (pass.error.empty() && pass.left > 0 && pass.held_elsewhere == pass.left)) {
    out["state"] = "running";
    if (pass.held_elsewhere > 0) out["held_elsewhere"] = pass.held_elsewhere;
    return Response::json(202, out.dump(2) + "\n");
  }
  if (pass.left == 0) return Response::json(200, out.dump(2) + "\n");
  out["error"] = pass.error + "; the move resumes at the next refresh or move-slot call";
  return Response::json(503, out.dump(2) + "\n");
}

void FrontCore::resumeMoves() { (void)mover_.run(std::nullopt); }

}  // namespace lcc::front
