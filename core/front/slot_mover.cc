#include "front/slot_mover.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <thread>

#include "front/placement.h"
#include "http/url_codec.h"

namespace lcc::front {
namespace {

using nlohmann::json;

constexpr int kMovesPerPass = 10000;
constexpr std::size_t kUrlsPerImport = 1000;  // one intake set at the target each
constexpr auto kDrainPoll = std::chrono::milliseconds(200);
constexpr std::uint64_t kMaxPages = 1'000'000;  // export pages of one provider (a bound, never reached)
// The state_reason the front end gives a provider it suspends for a move: only a
// provider suspended for this reason is resumed at the end (an operator's suspension stays).
constexpr const char* kMoveReason = "front end: slot move";

std::string providerPath(std::uint64_t local_id) { return "/admin/providers/" + std::to_string(local_id); }
std::string qmPath(std::uint64_t local_id) { return "/admin/qm/providers/" + std::to_string(local_id); }

// The answer as JSON when its status is one of `ok`, else the error.
Result<json> expect(const LccAnswer& a, std::initializer_list<int> ok, const std::string& what) {
  if (!a.isOk()) return Status::busy(what + ": " + a.status().message());
  for (int s : ok) {
    if (a.value().status == s) {
      json j = json::parse(a.value().body, nullptr, false);
      return j.is_discarded() ? json::object() : j;
    }
  }
  const std::string why = what + ": HTTP " + std::to_string(a.value().status) + " " + http::errorText(a.value());
  if (a.value().status == 404) return Status::notFound(why);
  return Status::busy(why);
}

}  // namespace

SlotMover::SlotMover(const FrontOptions& options, FrontDb& db, const LccClient& client, Clock* clock,
                     std::function<void(std::uint64_t)> forget)
    : opt_(options), db_(db), client_(client), clock_(clock), forget_(std::move(forget)) {}

std::optional<LccSpec> SlotMover::spec(const std::string& name) const {
  for (const auto& l : opt_.lccs) {
    if (l.name == name) return l;
  }
  return std::nullopt;
}

SlotMover::Pass SlotMover::run(std::optional<std::uint32_t> slot) {
  Pass pass;
  std::unique_lock<std::mutex> lock(run_mu_, std::try_to_lock);
  if (!lock.owns_lock()) {
    pass.busy = true;
    return pass;
  }
  auto rows = db_.moves(kMovesPerPass);
  if (!rows.isOk()) {
    pass.error = "moves: " + rows.status().message();
    return pass;
  }
  for (MoveRow row : rows.value()) {
    if (slot && row.slot != *slot) continue;
    // One front end at a time runs a move's steps (FrontDb::claimMove); one that another
    // holds is left to it (taken over once it lets go or dies), and one that is claimed
    // is read again: the other may have taken it further, or ended it, meanwhile.
    auto claimed = db_.claimMove(row.provider);
    if (!claimed.isOk() || !claimed.value()) {
      ++pass.left;
      if (claimed.isOk()) {
        ++pass.held_elsewhere;
      } else {
        pass.error = "claiming the move of " + std::to_string(row.provider) + ": " + claimed.status().message();
      }
      continue;
    }
    auto now = db_.move(row.provider);
    if (!now.isOk()) {
      ++pass.left;
      pass.error = "reading the move of " + std::to_string(row.provider) + ": " + now.status().message();
      continue;
    }
    if (!now.value()) continue;  // ended by another front end meanwhile
    MoveRow m = *now.value();
    auto phase = parseMovePhase(m.phase);
    // At most one step per phase: a move ends or stops within 9 steps, an undo within 2.
    for (int n = 0; phase && *phase != MovePhase::kDone && n < 10; ++n) {
      const MoveStep s = nextMoveStep(*phase);
      if (Status st = step(m, s); !st.isOk()) {
        pass.error = "provider " + std::to_string(m.provider) + " (" + m.src + " → " + m.dst + ", phase " +
                     m.phase + "): " + st.message();
        spdlog::warn("front: move of {}", pass.error);
        break;
      }
      phase = phaseAfter(s);
      m.phase = movePhaseName(*phase);
      if (*phase == MovePhase::kDone && s == MoveStep::kRestoreSource) {
        spdlog::info("front: move of provider {} from {} to {} undone", m.provider, m.src, m.dst);
      } else if (*phase == MovePhase::kDone) {
        ++pass.moved;
        spdlog::info("front: provider {} moved from {} to {} (its id there {})", m.provider, m.src, m.dst,
                     m.to_local_id);
      }
    }
    if (!phase || *phase != MovePhase::kDone) ++pass.left;
  }
  if (Status s = db_.releaseMoves(); !s.isOk()) spdlog::warn("front: letting the moves' claims go: {}", s.message());
  return pass;
}

// One step, then its phase recorded (the last step deletes the move row instead).
Status SlotMover::step(MoveRow& m, MoveStep s) {
  if (!spec(m.src) || !spec(m.dst)) return Status::busy("front.lccs does not name " + m.src + " or " + m.dst);
  switch (s) {
    case MoveStep::kFreeze:
      LCC_RETURN_IF_ERROR(db_.setMoving(m.provider));
      forget_(m.provider);
      break;
    case MoveStep::kSuspendSource:
      LCC_RETURN_IF_ERROR(suspend(m.src, m.src_local_id, true));
      break;
    case MoveStep::kWaitDrained:
      LCC_RETURN_IF_ERROR(waitDrained(m));
      break;
    case MoveStep::kCreateTarget:
      LCC_RETURN_IF_ERROR(createTarget(m));
      break;
    case MoveStep::kCopy:
      LCC_RETURN_IF_ERROR(copyUrls(m));
      break;
    case MoveStep::kAwaitCopies:
      LCC_RETURN_IF_ERROR(awaitCopies(m));
      break;
    case MoveStep::kRemoveSource:
      LCC_RETURN_IF_ERROR(removeSource(m));
      break;
    case MoveStep::kPlace:
      LCC_RETURN_IF_ERROR(db_.placeMoved(m.provider, m.dst, m.to_local_id));
      forget_(m.provider);
      break;
    case MoveStep::kResumeTarget:
      LCC_RETURN_IF_ERROR(suspend(m.dst, m.to_local_id, false));
      return db_.dropMove(m.provider);
    case MoveStep::kRemoveTarget:
      LCC_RETURN_IF_ERROR(removeTarget(m));
      break;
    case MoveStep::kRestoreSource:
      LCC_RETURN_IF_ERROR(suspend(m.src, m.src_local_id, false));
      LCC_RETURN_IF_ERROR(db_.placeMoved(m.provider, m.src, m.src_local_id));
      forget_(m.provider);
      return db_.dropMove(m.provider);
    case MoveStep::kNone:
      return Status::ok();
  }
  return db_.setMovePhase(m.provider, movePhaseName(phaseAfter(s)), m.to_local_id);
}

// Suspends (for the move) or resumes (what the move suspended) provider `local_id`
// on `lcc`. A provider an operator suspended is left as it is, both ways.
Status SlotMover::suspend(const std::string& lcc, std::uint64_t local_id, bool want_suspended) {
  const LccSpec where = *spec(lcc);
  auto shown = expect(client_.call(where, "GET", providerPath(local_id)), {200}, lcc + ": provider show");
  if (!shown.isOk()) return shown.status();
  const bool suspended = shown.value().value("state", "") == "suspended";
  const bool ours = shown.value().value("state_reason", "") == kMoveReason;
  if (want_suspended ? suspended : (!suspended || !ours)) return Status::ok();
  const std::string form = std::string("reason=") + http::percentEncode(want_suspended ? kMoveReason : "");
  auto r = client_.call(where, "POST", providerPath(local_id) + (want_suspended ? "/suspend" : "/resume"), form);
  return expect(r, {200}, lcc + ": provider " + (want_suspended ? "suspend" : "resume")).status();
}

// Until the source's QM holds the provider with nothing in flight or unapplied, at
// most front.move_wait (then the move keeps its phase and is taken up again later).
Status SlotMover::waitDrained(const MoveRow& m) {
  const LccSpec src = *spec(m.src);
  const MonoTime deadline = clock_->monoNow() + opt_.move_wait;
  for (;;) {
    auto r = expect(client_.call(src, "GET", qmPath(m.src_local_id) + "/export?limit=0"), {200}, m.src + ": export");
    SourceProbe probe;
    probe.asked = r.isOk() || r.status().code() == StatusCode::kNotFound;
    probe.exists = r.isOk();
    if (r.isOk()) {
      probe.held = r.value().value("held", false);
      probe.in_flight = r.value().value("in_flight", std::uint64_t{0});
      probe.unapplied = r.value().value("unapplied", std::uint64_t{0});
    }
    switch (decideDrain(probe, clock_->monoNow(), deadline)) {
      case DrainDecision::kDrained: return Status::ok();
      case DrainDecision::kSourceLost: return Status::notFound(m.src + " has no provider " + std::to_string(m.src_local_id));
      case DrainDecision::kGiveUp:
        return Status::busy(m.src + " still fetches for it after front.move_wait" +
                            (r.isOk() ? std::string() : " (" + r.status().message() + ")"));
      case DrainDecision::kWait: break;
    }
    std::this_thread::sleep_for(kDrainPoll);
  }
}

Status SlotMover::createTarget(MoveRow& m) {
  const LccSpec dst = *spec(m.dst);
  TargetProbe probe;
  auto found = client_.findMarked(dst, placementMarker(opt_.schema, m.provider));
  probe.asked = found.isOk();
  if (found.isOk()) probe.local_id = found.value();
  std::uint64_t id = 0;
  switch (decideCreate(probe)) {
    case CreateDecision::kRetryLater: return Status::busy(m.dst + ": " + found.status().message());
    case CreateDecision::kUseFound: id = *probe.local_id; break;
    case CreateDecision::kCreate: {
      auto made = makeAtTarget(m, dst);
      if (!made.isOk()) return made.status();
      id = made.value();
      break;
    }
  }
  auto shown = expect(client_.call(*spec(m.src), "GET", providerPath(m.src_local_id)), {200}, m.src + ": provider show");
  if (!shown.isOk()) return shown.status();
  m.to_local_id = id;
  return copySettings(m, dst, shown.value());
}

// The provider made at the target: the source's prefixes, priority, bandwidth and
// password hash, suspended as the source is, with the front end's marker.
Result<std::uint64_t> SlotMover::makeAtTarget(const MoveRow& m, const LccSpec& dst) {
  const LccSpec src = *spec(m.src);
  auto shown = expect(client_.call(src, "GET", providerPath(m.src_local_id)), {200}, m.src + ": provider show");
  if (!shown.isOk()) return shown.status();
  auto cred = expect(client_.call(src, "GET", providerPath(m.src_local_id) + "/credentials"), {200},
                     m.src + ": provider credentials");
  if (!cred.isOk()) return cred.status();
  const json& p = shown.value();
  std::string form = "state=suspended&state_reason=" + http::percentEncode(p.value("state_reason", ""));
  for (const auto& prefix : p.value("prefixes", json::array())) {
    if (prefix.is_string()) form += "&prefix=" + http::percentEncode(prefix.get<std::string>());
  }
  form += "&priority=" + std::to_string(p.value("priority", 0));
  form += "&bandwidth=" + std::to_string(p.value("bandwidth", std::uint64_t{0}));
  form += "&contact=" + http::percentEncode(placementMarker(opt_.schema, m.provider));
  form += "&password_hash=" + http::percentEncode(cred.value().value("password_hash", ""));
  form += "&key_id=" + http::percentEncode(cred.value().value("key_id", ""));
  auto made = expect(client_.call(dst, "POST", "/admin/providers", form), {201}, m.dst + ": provider add");
  if (!made.isOk()) return made.status();
  if (!made.value().contains("id") || !made.value()["id"].is_number_unsigned()) {
    return Status::busy(m.dst + ": provider add answered no id");
  }
  return made.value()["id"].get<std::uint64_t>();
}

// The settings `add` does not take; done again after a crash (the same values).
Status SlotMover::copySettings(const MoveRow& m, const LccSpec& dst, const json& p) {
  std::string form = "quota_files=" + std::to_string(p.value("quota_files", std::uint64_t{0})) +
                     "&quota_bytes=" + std::to_string(p.value("quota_bytes", std::uint64_t{0}));
  if (p.contains("sitemap") && p["sitemap"].is_string()) {
    form += "&sitemap=" + http::percentEncode(p["sitemap"].get<std::string>());
    form += "&sitemap_interval=" + std::to_string(p.value("sitemap_interval_ms", std::int64_t{0})) + "ms";
  }
  return expect(client_.call(dst, "POST", providerPath(m.to_local_id), form), {200}, m.dst + ": provider set").status();
}

// The source's stored and queued URLs into the target's QM, page by page (front.move_page),
// as intake sets named after the move (a set sent again after a crash is a duplicate
// there, not applied twice). A stored URL goes as a copy: the target takes its bytes
// from the source's GET /cu/content/ (core/qm/move_copy.h).
Status SlotMover::copyUrls(const MoveRow& m) {
  const LccSpec src = *spec(m.src);
  std::string after;
  std::uint64_t chunk = 1, total = 0, copies = 0;
  for (std::uint64_t pages = 0; pages < kMaxPages; ++pages) {
    std::string path = qmPath(m.src_local_id) + "/export?limit=" + std::to_string(opt_.move_page);
    if (!after.empty()) path += "&after=" + http::percentEncode(after);
    auto out = expect(client_.callWithin(opt_.move_wait, src, "GET", path), {200}, m.src + ": export");
    if (!out.isOk()) return out.status();
    json urls = out.value().value("urls", json::array());
    for (auto& u : urls) {
      if (!u.is_object() || !u.contains("at") || !u["at"].is_object()) continue;
      const json& at = u["at"];
      u["cp"] = json{{"u", (src.admin_tls ? "https://" : "http://") + src.admin + at.value("path", "")},
                     {"md5", at.value("md5", "")},
                     {"sz", at.value("sz", std::uint64_t{0})}};
      u.erase("at");
      ++copies;
    }
    LCC_RETURN_IF_ERROR(importPage(m, urls, chunk));
    total += urls.size();
    const std::string next = out.value().value("next", "");
    if (!out.value().value("truncated", false)) {
      spdlog::info("front: provider {}: {} URL(s) ({} with their bytes) copied from {} to {} in {} page(s)", m.provider,
                   total, copies, m.src, m.dst, pages + 1);
      return Status::ok();
    }
    if (next.empty() || next == after) return Status::busy(m.src + ": export gave no cursor past " + after);
    after = next;
  }
  return Status::busy(m.src + ": export did not end within " + std::to_string(kMaxPages) + " pages");
}

// One page of URLs into the target's QM, 1000 a set, numbered on from `chunk`.
Status SlotMover::importPage(const MoveRow& m, const json& urls, std::uint64_t& chunk) {
  const std::string name = moveSetName(opt_.schema, m.provider, m.to_local_id);
  const LccSpec dst = *spec(m.dst);
  for (std::size_t at = 0; at < urls.size(); at += kUrlsPerImport, ++chunk) {
    json part = json::array();
    for (std::size_t i = at; i < urls.size() && i < at + kUrlsPerImport; ++i) part.push_back(urls[i]);
    const std::string form = "name=" + http::percentEncode(name) + "&chunk=" + std::to_string(chunk) +
                             "&urls=" + http::percentEncode(part.dump());
    auto r = client_.call(dst, "POST", qmPath(m.to_local_id) + "/import", form);
    LCC_RETURN_IF_ERROR(expect(r, {200}, m.dst + ": import").status());
  }
  return Status::ok();
}

// The target resumed (if the move suspended it), then waited for until its QM took
// every copy (its bytes at the target, or its site fetched instead), at most
// front.move_wait (then the move keeps its phase and is taken up again later).
Status SlotMover::awaitCopies(const MoveRow& m) {
  LCC_RETURN_IF_ERROR(suspend(m.dst, m.to_local_id, false));
  const LccSpec dst = *spec(m.dst);
  const MonoTime deadline = clock_->monoNow() + opt_.move_wait;
  for (;;) {
    auto r = expect(client_.call(dst, "GET", qmPath(m.to_local_id) + "/export?limit=0&copies=1"), {200},
                    m.dst + ": export");
    auto shown = expect(client_.call(dst, "GET", providerPath(m.to_local_id)), {200}, m.dst + ": provider show");
    CopiesProbe probe;
    probe.asked = (r.isOk() && shown.isOk()) || r.status().code() == StatusCode::kNotFound;
    probe.exists = r.isOk();
    if (r.isOk()) {
      probe.copies = r.value().value("copies", std::uint64_t{0});
      probe.unapplied = r.value().value("unapplied", std::uint64_t{0});
    }
    if (shown.isOk()) {
      probe.operator_suspended = shown.value().value("state", "") == "suspended" &&
                                 shown.value().value("state_reason", "") != kMoveReason;
    }
    switch (decideCopies(probe, clock_->monoNow(), deadline)) {
      case CopiesDecision::kReceived: return Status::ok();
      case CopiesDecision::kTargetLost:
        return Status::notFound(m.dst + " has no provider " + std::to_string(m.to_local_id));
      case CopiesDecision::kGiveUp:
        return Status::busy(m.dst + " still takes copies after front.move_wait (" +
                            (r.isOk() ? std::to_string(probe.copies) + " left" : r.status().message()) + ")");
      case CopiesDecision::kWait: break;
    }
    std::this_thread::sleep_for(kDrainPoll);
  }
}

// An undone move: what it made at the target (its marker), removed with its content.
Status SlotMover::removeTarget(const MoveRow& m) {
  const LccSpec dst = *spec(m.dst);
  auto found = client_.findMarked(dst, placementMarker(opt_.schema, m.provider));
  if (!found.isOk()) return Status::busy(m.dst + ": " + found.status().message());
  if (!found.value()) return Status::ok();
  auto r = client_.call(dst, "DELETE", providerPath(*found.value()) + "?purge=1");
  auto ok = expect(r, {200, 202}, m.dst + ": provider remove (undo)");
  if (ok.isOk() || ok.status().code() == StatusCode::kNotFound) return Status::ok();
  return ok.status();
}

// Removed with its content at the source (its CUs get tombstones); gone already: done.
Status SlotMover::removeSource(const MoveRow& m) {
  auto r = client_.call(*spec(m.src), "DELETE", providerPath(m.src_local_id) + "?purge=1");
  auto ok = expect(r, {200, 202}, m.src + ": provider remove");
  if (ok.isOk() || ok.status().code() == StatusCode::kNotFound) return Status::ok();
  return ok.status();
}

}  // namespace lcc::front
