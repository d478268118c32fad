#include "uns/uns_core.h"

#include <algorithm>
#include <charconv>
#include <limits>

#include <spdlog/spdlog.h>

#include "common/password.h"
#include "lcc/error_codes.h"

namespace lcc::uns {
namespace {

// What a CP is told when its provider is not active (the init, or a set after it).
std::string notActiveMessage(const ProviderRecord& p) {
  const std::string& why = p.state_reason;  // set when the RS suspended it (re-verification) or a slot move
  if (p.state == ProviderState::kSuspended) {
    return why.empty() ? "provider not active (suspended)" : "provider not active (suspended: " + why + ")";
  }
  return p.state == ProviderState::kPending ? "provider not active (registration not verified)"
                                            : "provider not active (being removed)";
}

}  // namespace

std::uint64_t queuedUrlsInStore(ProviderStore* providers, ProviderId pid) {
  if (providers == nullptr) return 0;
  Result<std::uint64_t> n = providers->queuedUrls(pid);
  if (n.isOk()) return n.value();
  if (n.status().code() != StatusCode::kNotSupported) {  // a lost connection: the init goes on without it
    spdlog::debug("uns: provider {}: reading its queued URLs failed: {}", pid, n.status().toString());
  }
  return 0;
}

UnsCore::UnsCore(CoreConfig config, ProviderStore* providers, Clock* clock,
                 std::function<std::uint64_t(ProviderId)> queued_urls, std::function<std::uint64_t()> free_space)
    : config_(std::move(config)),
      auth_cache_(config_.auth_cache_entries),
      auth_limiter_(AddressLimiterOptions{.max_events = config_.auth_failures_per_minute,
                                          .window = Millis(60 * 1000),
                                          .cooldown = config_.auth_cooldown,
                                          .max_addresses = static_cast<std::size_t>(config_.auth_tracked_addresses)},
                    clock),
      providers_(providers),
      clock_(clock),
      queued_urls_(std::move(queued_urls)),
      free_space_(std::move(free_space)),
      committer_(providers) {
  if (!config_.passwords) config_.passwords = PasswordHasher::ephemeral();
}

bool UnsCore::checkPassword(ProviderId pid, const std::string& stored, const std::string& password,
                            std::string* upgrade) {
  if (auth_cache_.knows(pid, stored, password)) return true;
  const PasswordHasher::Verdict v = config_.passwords->verify(stored, password);
  if (!v.ok) return false;
  if (v.upgrade) {
    *upgrade = config_.passwords->hashToken(password);
  } else if (v.slow) {
    auth_cache_.remember(pid, stored, password);
  }
  return true;
}

void UnsCore::countConnectionsWith(std::function<std::uint64_t()> count) {
  std::lock_guard<std::mutex> lock(mu_);
  connection_count_ = std::move(count);
}

ErrorCode UnsCore::stillActive(ProviderId pid, std::string* message) {
  auto got = providers_->get(pid);
  if (!got.isOk()) {
    spdlog::warn("uns: provider {}: reading the PIDB failed: {}", pid, got.status().toString());
    *message = std::string(errorCodeMessage(ErrorCode::kOffline));
    return ErrorCode::kOffline;
  }
  if (!got.value()) {
    *message = "provider not active (being removed)";
    return ErrorCode::kNotActive;
  }
  if (got.value()->state == ProviderState::kActive) return ErrorCode::kNone;
  *message = notActiveMessage(*got.value());
  return ErrorCode::kNotActive;
}

std::uint64_t UnsCore::connections() const {
  std::lock_guard<std::mutex> lock(mu_);
  return connection_count_ ? connection_count_() : 0;
}

void UnsCore::releaseProvider(ProviderId pid) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = per_provider_.find(pid);
  if (it != per_provider_.end() && --it->second == 0) per_provider_.erase(it);
}

ProviderId UnsCore::parseId(const std::string& s) {
  std::uint64_t v = 0;
  bool digits = !s.empty() && s.size() <= 10 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits || std::from_chars(s.data(), s.data() + s.size(), v).ec != std::errc() || v == 0 || v > 0xffffffffu) {
    return 0;
  }
  return static_cast<ProviderId>(v);
}

bool UnsCore::slowCheck(const AuthRequest& request) {
  const ProviderId pid = parseId(request.id);
  if (pid == 0) return false;
  auto got = providers_->get(pid);
  // Argon2id hashes start "$argon2" (common/password.h); an error is answered by checkAndAdmit.
  return got.isOk() && got.value() && got.value()->password_hash.rfind("$argon2", 0) == 0;
}

void UnsCore::authenticate(const AuthRequest& request, const std::string& peer_ip, AuthDone done,
                           const Offload& offload) {
  if (offload && slowCheck(request)) {
    return offload([this, request, peer_ip, done = std::move(done)]() mutable {
      authenticate(request, peer_ip, std::move(done));
    });
  }
  // An address guessing passwords is turned away before any password is checked, so
  // guessing costs it the cool-down and costs us nothing (docs/security.md).
  if (const AddressLimiter::Decision d = auth_limiter_.check(peer_ip); !d.allowed) {
    AuthResult r;
    r.code = ErrorCode::kTooManyConnections;
    r.throttled = true;
    const std::int64_t seconds = (d.retry_after.count() + 999) / 1000;
    r.message = "too many failed authentications from this address; try again in " + std::to_string(seconds) + " s";
    return done(std::move(r));
  }
  Admission a = checkAndAdmit(request);
  if (a.result.code == ErrorCode::kNone) return countConnection(std::move(a), peer_ip, std::move(done));
  if (a.result.code == ErrorCode::kAuthFailed && !auth_limiter_.record(peer_ip).allowed) {
    // Once per cool-down: the refusals during it are only counted (/metrics).
    spdlog::warn("uns: {}: {} failed inits within a minute; its inits get 120 for {} s", peer_ip,
                 config_.auth_failures_per_minute, config_.auth_cooldown.count() / 1000);
  }
  done(std::move(a.result));
}

AuthResult UnsCore::authenticate(const AuthRequest& request, const std::string& peer_ip) {
  return waitFor<AuthResult>([&](AuthDone done) { authenticate(request, peer_ip, std::move(done)); });
}

UnsCore::Admission UnsCore::checkAndAdmit(const AuthRequest& request) {
  Admission a;
  auto refuse = [&](ErrorCode code, std::string msg) {
    a.result.code = code;
    a.result.message = std::move(msg);
    return std::move(a);
  };
  const ProviderId pid = parseId(request.id);
  if (pid == 0) return refuse(ErrorCode::kAuthFailed, "authentication failed");
  auto got = providers_->get(pid);
  if (!got.isOk()) {
    spdlog::warn("uns: provider {}: reading the PIDB failed: {}", pid, got.status().toString());
    // Busy (a lost connection, a failover of a shared PIDB): "try later", not an error.
    if (got.status().isBusy()) return refuse(ErrorCode::kOffline, std::string(errorCodeMessage(ErrorCode::kOffline)));
    return refuse(ErrorCode::kInternal, "internal error");
  }
  if (!got.value()) {
    // Spend the time of a check of a generated token, the kind most providers have,
    // so that answers do not tell which provider ids exist (docs/security.md).
    config_.passwords->verifyNothing(request.password);
    return refuse(ErrorCode::kAuthFailed, "authentication failed");
  }
  a.stored_hash = got.value()->password_hash;
  if (!checkPassword(pid, a.stored_hash, request.password, &a.upgraded_hash)) {
    return refuse(ErrorCode::kAuthFailed, "authentication failed");
  }
  if (got.value()->state != ProviderState::kActive) return refuse(ErrorCode::kNotActive, notActiveMessage(*got.value()));
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto& n = per_provider_[pid];
    if (n >= config_.max_connections_per_provider) {
      if (n == 0) per_provider_.erase(pid);
      return refuse(ErrorCode::kTooManyConnections, "too many connections of this provider");
    }
    ++n;
  }
  a.result.pid = pid;
  return a;
}

void UnsCore::countConnection(Admission a, const std::string& peer_ip, AuthDone done) {
  const ProviderId pid = a.result.pid;
  const WallTime now = clock_->now();
  const Millis period = config_.fullset_period;
  // Read here, on the session's thread, not on the committer's: on a shared PIDB it is
  // a round trip, and the committer serves every session.
  const std::uint64_t processing = queued_urls_ ? queued_urls_(pid) : queuedUrlsInStore(providers_, pid);
  auto rec = std::make_shared<ProviderRecord>();
  auto change = [rec, now, period, ip = peer_ip, stored = std::move(a.stored_hash),
                 upgraded = std::move(a.upgraded_hash)](ProviderRecord& p) {
    // The first connection ever: the LCC has nothing of this provider yet and asks for
    // everything (docs/protocol.md, reason first-connect). Sticky until a full set.
    if (p.conn_seq == 0 && !p.fullset_wanted) {
      p.fullset_wanted = true;
      p.fullset_reason = FullSetReason::kFirstConnect;
    }
    // The init_accepted describes the previous connection, then this one is counted.
    *rec = p;
    // Only if no one changed the password since we checked it.
    if (!upgraded.empty() && p.password_hash == stored) p.password_hash = upgraded;
    ++p.conn_seq;
    p.last_ip = ip;
    p.last_connect = now;
    if (now - p.fullset_period_start >= period) {
      p.fullset_period_start = now;
      p.fullsets_used = 0;
      rec->fullset_period_start = now;
      rec->fullsets_used = 0;
    }
    rec->conn_seq = p.conn_seq;
    return Status::ok();
  };
  // The CP is told its connection seq only once the write that counts it is synced.
  committer_.modify(pid, std::move(change), [this, pid, rec, processing, done = std::move(done)](const Status& s) {
    if (s.isOk()) return done(admitted(pid, *rec, processing));
    releaseProvider(pid);
    spdlog::warn("uns: provider {}: updating the PIDB failed: {}", pid, s.toString());
    AuthResult r;
    r.code = s.isBusy() ? ErrorCode::kOffline : ErrorCode::kInternal;  // Busy: try later (130)
    r.message = s.isBusy() ? std::string(errorCodeMessage(ErrorCode::kOffline)) : "internal error";
    done(std::move(r));
  });
}

AuthResult UnsCore::admitted(ProviderId pid, const ProviderRecord& rec, std::uint64_t processing) const {
  AuthResult r;
  r.pid = pid;
  auto& info = r.info;
  info.seq = rec.conn_seq;
  info.last_ip = rec.last_ip;
  if (rec.last_connect) info.last_time = toUnixMillis(*rec.last_connect) / 1000;
  info.mime = config_.accept_mime;
  info.files_used = rec.used_files;
  info.space_used = rec.used_bytes;
  constexpr std::uint64_t kUnlimited = std::numeric_limits<std::uint64_t>::max();
  info.files_free = rec.quota_files == 0 ? kUnlimited : (rec.quota_files > rec.used_files ? rec.quota_files - rec.used_files : 0);
  std::uint64_t space_free =
      rec.quota_bytes == 0 ? kUnlimited : (rec.quota_bytes > rec.used_bytes ? rec.quota_bytes - rec.used_bytes : 0);
  if (free_space_) space_free = std::min(space_free, free_space_());
  info.space_free = space_free;
  info.fullset_allowed =
      config_.fullsets_per_period > rec.fullsets_used ? config_.fullsets_per_period - rec.fullsets_used : 0;
  info.fullset_wanted = rec.fullset_wanted;
  if (rec.fullset_wanted) {
    info.fullset_reason = std::string(fullSetReasonName(rec.fullset_reason));
    if (info.fullset_reason.empty()) info.fullset_reason = "admin";
  }
  info.error_total = std::max<std::uint64_t>(rec.error_total, rec.errors.size());
  for (std::size_t i = 0; i < rec.errors.size() && i < config_.report_errors; ++i) info.errors.push_back(rec.errors[i]);
  r.reported_errors = rec.errors;
  info.processing = processing;
  r.prefixes = rec.prefixes;
  r.quota_files = rec.quota_files;
  r.quota_bytes = rec.quota_bytes;
  r.used_files = rec.used_files;
  r.used_bytes = rec.used_bytes;
  return r;
}

void UnsCore::clearReportedErrors(const WrittenAction& action, Done done) {
  committer_.modify(
      action.pid,
      [action](ProviderRecord& p) {
        p.error_total = p.error_total > action.error_total ? p.error_total - action.error_total : 0;
        // Drop the entries that were reported; errors that arrived since stay.
        auto reported = [&](const FetchErrorEntry& e) {
          return std::find(action.errors.begin(), action.errors.end(), e) != action.errors.end();
        };
        p.errors.erase(std::remove_if(p.errors.begin(), p.errors.end(), reported), p.errors.end());
        return Status::ok();
      },
      std::move(done));
}

Status UnsCore::clearReportedErrors(const WrittenAction& action) {
  return waitFor<Status>([&](Done done) { clearReportedErrors(action, std::move(done)); });
}

void UnsCore::setAccepted(ProviderId pid, SetKind kind, bool was_wanted, Done done) {
  if (kind != SetKind::kFull) return done(Status::ok());
  const WallTime now = clock_->now();
  const Millis period = config_.fullset_period;
  committer_.modify(
      pid,
      [now, period, was_wanted](ProviderRecord& p) {
        if (p.fullset_wanted || was_wanted) {
          p.fullset_wanted = false;
          p.fullset_reason = FullSetReason::kNone;
        } else {
          if (now - p.fullset_period_start >= period) {
            p.fullset_period_start = now;
            p.fullsets_used = 0;
          }
          ++p.fullsets_used;
        }
        return Status::ok();
      },
      std::move(done));
}

Status UnsCore::setAccepted(ProviderId pid, SetKind kind, bool was_wanted) {
  return waitFor<Status>([&](Done done) { setAccepted(pid, kind, was_wanted, std::move(done)); });
}

}  // namespace lcc::uns
