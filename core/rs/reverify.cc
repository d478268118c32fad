// reverify.cc — re-verification (issue 14): every rs.reverify_interval, the RS fetches
// each active provider's secret file again, the way step two did (the node's Fetcher,
// no redirect off the prefix). A file that is gone (HTTP 404/410) or holds something
// else suspends the provider with the reason; a fetch that fails otherwise is tried
// again at each sweep and suspends only after rs.reverify_failures failures in a row
// (docs/design-decisions.md, "Re-verification"). With rs.reverify_grace, a file that
// is gone first only warns (the notifier mails the owner); the provider is suspended
// once it has been gone that long (issue 29).
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "lcc/support/time_util.h"
#include "rs/rs_service.h"

namespace lcc::rs {
namespace {

// Fetches of secret files at once: re-verification must not crowd out robots that
// share the fetcher, and thousands of providers fall due together after an outage.
constexpr std::size_t kReverifyInFlight = 4;

bool dueForReverify(const ProviderRecord& p, WallTime now) {
  return p.state == ProviderState::kActive && !p.secret.empty() && !p.secret_url.empty() && now >= p.reg_expires;
}

}  // namespace

bool suspendedByReverification(const ProviderRecord& p) {
  return p.state == ProviderState::kSuspended && p.state_reason.rfind(kReverifyReasonStart, 0) == 0;
}

ReverifyVerdict reverifyVerdict(const SecretFetch& got) {
  if (got.result.ok()) {
    if (!got.read_error.empty()) return ReverifyVerdict::kUnreachable;  // our disk, not their site
    return got.matches ? ReverifyVerdict::kConfirmed : ReverifyVerdict::kChanged;
  }
  return got.result.code == ErrorCode::kNotFound ? ReverifyVerdict::kGone : ReverifyVerdict::kUnreachable;
}

std::size_t Registrar::reverifyDue() {
  if (options_.reverify_interval.count() <= 0) return 0;
  const WallTime now = clock_.now();
  std::vector<ProviderId> due;
  std::set<ProviderId> active;
  Status s = providers_.scan([&](const ProviderRecord& p) {
    if (dueForReverify(p, now)) due.push_back(p.id);
    if (p.state == ProviderState::kActive) active.insert(p.id);
    return true;
  });
  if (!s.isOk()) spdlog::warn("rs: re-verification scan: {}", s.toString());
  if (s.isOk()) {
    std::lock_guard<std::mutex> lock(mu_);
    // Suspended or removed meanwhile: the grace of a missing file no longer runs.
    if (std::erase_if(missing_since_, [&](const auto& kv) { return active.count(kv.first) == 0; }) > 0) {
      saveMissingLocked();
    }
  }
  std::size_t queued = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return 0;
    for (ProviderId id : due) {
      if (reverify_pending_.insert(id).second) {
        reverify_queue_.push_back(id);
        ++queued;
      }
    }
  }
  if (queued > 0) spdlog::info("rs: re-verifying {} provider(s)", queued);
  pumpReverify();
  return queued;
}

std::size_t Registrar::reverifyPending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reverify_pending_.size();
}

void Registrar::pumpReverify() {
  for (;;) {
    ProviderId id = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_ || reverify_queue_.empty() || reverify_running_ >= kReverifyInFlight) return;
      id = reverify_queue_.front();
      reverify_queue_.pop_front();
      ++reverify_running_;
    }
    startReverify(id);
  }
}

void Registrar::startReverify(ProviderId id) {
  auto got = providers_.get(id);
  // Changed since it was queued (suspended, removed, verified by someone): not due now.
  if (!got.isOk() || !got.value() || !dueForReverify(*got.value(), clock_.now())) return finishReverify(id);
  const ProviderRecord rec = *got.value();
  std::weak_ptr<Registrar> weak = weak_from_this();
  auto started = fetchSecret(rec, [weak, rec](SecretFetch result) {
    auto self = weak.lock();
    if (!self) return;
    // Off the fetcher's thread: the outcome writes the PIDB.
    std::function<void(std::function<void()>)> post;
    {
      std::lock_guard<std::mutex> lock(self->mu_);
      post = self->post_;
    }
    auto work = [weak, rec, result = std::move(result)] {
      if (auto s = weak.lock()) {
        s->reverified(rec, result);
        s->finishReverify(rec.id);
        s->pumpReverify();
      }
    };
    if (post) post(std::move(work));
    else work();
  });
  if (!started.isOk()) {
    spdlog::warn("rs: provider {}: re-verification could not start: {}", id, started.status().toString());
    finishReverify(id);
  }
}

void Registrar::finishReverify(ProviderId id) {
  std::lock_guard<std::mutex> lock(mu_);
  reverify_pending_.erase(id);
  if (reverify_running_ > 0) --reverify_running_;
}

void Registrar::reverified(const ProviderRecord& rec, const SecretFetch& got) {
  const ReverifyVerdict verdict = reverifyVerdict(got);
  const WallTime now = clock_.now();
  std::string reason;
  std::uint64_t failures = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;  // a fetch cancelled by stop() says nothing about the site
    if (verdict == ReverifyVerdict::kUnreachable) {
      failures = ++reverify_failures_[rec.id];
    } else {
      reverify_failures_.erase(rec.id);
    }
  }
  switch (verdict) {
    case ReverifyVerdict::kConfirmed: break;
    case ReverifyVerdict::kGone: {
      const WallTime since = options_.reverify_grace.count() > 0 ? noteMissing(rec.id, now) : now;
      if (now < since + options_.reverify_grace) {
        // Still active and due: fetched again at each sweep; the owner is mailed.
        spdlog::warn("rs: provider {}: the secret file {} is gone ({}); suspended at {} unless it is back", rec.id,
                     rec.secret_url, fetchOutcome(got.result), formatRfc3339(since + options_.reverify_grace));
        return;
      }
      reason = std::string(kReverifyReasonStart) + formatRfc3339(now) + ": the secret file " + rec.secret_url + " is gone (" +
               fetchOutcome(got.result) + ")" +
               (options_.reverify_grace.count() > 0 ? " since " + formatRfc3339(since) : std::string());
      break;
    }
    case ReverifyVerdict::kChanged:
      reason = std::string(kReverifyReasonStart) + formatRfc3339(now) + ": the file " + rec.secret_url +
               " no longer holds the provider's secret";
      break;
    case ReverifyVerdict::kUnreachable:
      if (reverify_unreachable_) reverify_unreachable_->inc();
      spdlog::warn("rs: provider {}: re-verification could not fetch {} ({} of {} in a row): {}", rec.id,
                   rec.secret_url, failures, options_.reverify_failures,
                   got.read_error.empty() ? fetchOutcome(got.result) : got.read_error);
      if (failures < options_.reverify_failures) return;  // still due: tried again at the next sweep
      reason = std::string(kReverifyReasonStart) + formatRfc3339(now) + ": " + rec.secret_url + " could not be fetched " +
               std::to_string(failures) + " times in a row (last: " + fetchOutcome(got.result) + ")";
      break;
  }
  Status s = providers_.modify(rec.id, [&](ProviderRecord& p) {
    // Only what was checked: not if an administrator changed the provider meanwhile.
    if (p.state != ProviderState::kActive || p.secret != rec.secret || p.secret_url != rec.secret_url) {
      return Status::aborted("changed meanwhile");
    }
    if (reason.empty()) {
      p.reg_expires = now + options_.reverify_interval;
    } else {
      p.state = ProviderState::kSuspended;
      p.state_reason = reason;
    }
    return Status::ok();
  });
  if (!s.isOk()) {
    if (s.code() != StatusCode::kAborted && s.code() != StatusCode::kNotFound) {
      spdlog::warn("rs: provider {}: recording the re-verification failed: {}", rec.id, s.toString());
    }
    return;
  }
  if (verdict != ReverifyVerdict::kUnreachable) forgetMissing(rec.id);  // back, changed or suspended
  if (reason.empty()) {
    if (reverified_) reverified_->inc();
    spdlog::info("rs: provider {}: re-verified ({})", rec.id, rec.secret_url);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    reverify_failures_.erase(rec.id);
  }
  if (reverify_suspended_) reverify_suspended_->inc();
  spdlog::warn("rs: provider {} suspended: {}", rec.id, reason);
}

WallTime Registrar::noteMissing(ProviderId id, WallTime now) {
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, added] = missing_since_.emplace(id, now);
  if (added) saveMissingLocked();
  return it->second;
}

void Registrar::forgetMissing(ProviderId id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (missing_since_.erase(id) > 0) saveMissingLocked();
}

std::map<ProviderId, mail::SecretMissing> Registrar::secretsMissing() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<ProviderId, mail::SecretMissing> out;
  for (const auto& [id, since] : missing_since_) out[id] = {since, since + options_.reverify_grace};
  return out;
}

void Registrar::saveMissingLocked() {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [id, since] : missing_since_) j[std::to_string(id)] = toUnixMillis(since);
  const std::string path = options_.work_dir + "/reverify-missing.json";
  Status s = env_.writeFileAtomic(path, j.dump() + "\n");
  if (!s.isOk()) spdlog::warn("rs: could not write {}: {} (a restart starts the grace again)", path, s.toString());
}

void Registrar::loadMissing() {
  const std::string path = options_.work_dir + "/reverify-missing.json";
  if (options_.work_dir.empty() || !env_.exists(path)) return;
  auto text = env_.readFile(path);
  auto j = text.isOk() ? nlohmann::json::parse(text.value(), nullptr, false) : nlohmann::json();
  if (!j.is_object()) {
    spdlog::warn("rs: {} is unreadable or not JSON; the grace of missing secret files starts again", path);
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [id, ms] : j.items()) {
    const auto pid = static_cast<ProviderId>(std::strtoull(id.c_str(), nullptr, 10));
    if (pid != 0 && ms.is_number_integer()) missing_since_[pid] = fromUnixMillis(ms.get<std::int64_t>());
  }
}

}  // namespace lcc::rs
