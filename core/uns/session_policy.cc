#include "uns/session_policy.h"

#include <algorithm>
#include <utility>

#include "proto/uns_qm.h"
#include "proto/uns_qm_local.h"
#include "lcc/support/url_norm.h"

namespace lcc::uns {

namespace {

// onData() hands the decoder at most this much at once, so that a streamed set's part
// (which is ready once stream_part_bytes gathered) holds at most one slice more: the
// input waiting in the session may be 1 MiB (after an authentication, say).
constexpr std::size_t kFeedSlice = 16384;

// The CP's attributes with c/b/f resolved against urlprefix, for error containers.
proto::UrlAttrs echoAttrs(const proto::UrlAttrs& attrs, std::string_view urlprefix) {
  proto::UrlAttrs out = attrs;
  for (auto& [k, v] : out) {
    if ((k == "c" || k == "f" || (k == "b" && !v.empty())) && !v.empty()) v = proto::resolveUrl(urlprefix, v);
  }
  return out;
}

}  // namespace

std::uint64_t maxSetUrls(const SessionConfig& config, std::uint64_t quota_files) {
  return std::max(config.max_set_urls, quota_files);
}

SessionPolicy::SessionPolicy(const SessionConfig& config) : config_(config), decoder_(*this, config.xml) {
  rules_.accept_mime = config_.accept_mime;
  rules_.max_url_length = config_.max_url_length;
  rules_.tod_slots = config_.slots;
}

SessionPolicy::~SessionPolicy() = default;

void SessionPolicy::write(std::string s) {
  out_total_ += s.size();
  out_ += s;
}

std::string SessionPolicy::takeOutput() {
  std::string out = std::move(out_);
  out_.clear();
  return out;
}

std::optional<std::pair<std::uint64_t, WrittenAction>> SessionPolicy::takeWrittenAction() {
  auto a = std::move(written_action_);
  written_action_.reset();
  return a;
}

std::optional<AuthRequest> SessionPolicy::takeAuthRequest() {
  auto a = std::move(auth_request_);
  auth_request_.reset();
  return a;
}

std::optional<SetSubmission> SessionPolicy::takeSubmission() {
  auto s = std::move(submission_);
  submission_.reset();
  return s;
}

std::optional<SetBegin> SessionPolicy::takeSetBegin() { return std::exchange(set_begin_, std::nullopt); }

std::optional<SetPart> SessionPolicy::takePart() {
  if (!part_ready_) return std::nullopt;
  part_ready_ = false;
  SetPart p{std::move(urls_), {}, part_urls_};
  urls_ = {};
  urls_bytes_ = 0;
  part_urls_ = 0;
  return p;
}

bool SessionPolicy::takeSetEnd() { return !part_ready_ && std::exchange(set_end_, false); }

void SessionPolicy::finish(ErrorCode code) {
  state_ = State::kDone;
  end_code_ = code;
  part_ready_ = set_end_ = false;  // an unfinished streamed set is dropped (aborted)
  urls_ = {};
  urls_bytes_ = 0;
}

void SessionPolicy::reject(ErrorCode code, std::string_view message) {
  if (state_ == State::kDone) return;
  std::string msg = message.empty() ? std::string(errorCodeMessage(code)) : std::string(message);
  if (!auth_) {
    write(proto::encodeInitRejected(code, msg));
  } else {
    if (!set_result_open_) {
      write(proto::encodeSetResultBegin());
      set_result_open_ = true;
    }
    write(proto::encodeSetRejected(code, msg));
  }
  finish(code);
}

void SessionPolicy::refuse(ErrorCode code, std::string_view message) { reject(code, message); }

std::size_t SessionPolicy::onData(const char* data, std::size_t n) {
  std::size_t used = 0;
  while (used < n) {
    if (state_ == State::kDone) return n;
    if (state_ == State::kAuthenticating || state_ == State::kForwarding || part_ready_) return used;
    std::size_t u = decoder_.feed(data + used, std::min(n - used, kFeedSlice));
    used += u;
    if (decoder_.failed()) {
      if (state_ != State::kDone) reject(decoder_.error(), decoder_.errorMessage());
      return n;
    }
    if (u == 0) break;
  }
  return used;
}

void SessionPolicy::onEof() {
  if (state_ == State::kDone || state_ == State::kForwarding || state_ == State::kAuthenticating) return;
  if (state_ == State::kAwaitSet && !decoder_.inDocument()) {
    finish(ErrorCode::kNone);  // init only: the CP just looked at its status
    return;
  }
  // The CP stopped in the middle of a message: nothing it sent is taken.
  reject(ErrorCode::kMalformed, "connection closed in the middle of a message");
}

void SessionPolicy::onTimeout(bool whole_session) {
  if (state_ == State::kDone) return;
  reject(ErrorCode::kTimeout, whole_session ? "session took too long" : "timed out waiting for data");
}

void SessionPolicy::onInit(std::string_view id, std::string_view password) {
  if (state_ != State::kAwaitInit) {
    decoder_.fail(ErrorCode::kMalformed, "protocol order violated: a second init");
    return reject(ErrorCode::kMalformed, "protocol order violated: init after init");
  }
  state_ = State::kAuthenticating;
  auth_request_ = AuthRequest{std::string(id), std::string(password)};
}

void SessionPolicy::onAuthenticated(AuthResult result) {
  if (state_ != State::kAuthenticating) return;
  if (result.code != ErrorCode::kNone) {
    state_ = State::kAwaitInit;  // so that reject() writes init_rejected
    return reject(result.code, result.message);
  }
  write(proto::encodeInitAccepted(result.info));
  WrittenAction clear;
  clear.pid = result.pid;
  clear.error_total = result.info.error_total;
  clear.errors = result.reported_errors;
  if (clear.error_total > 0 || !clear.errors.empty()) written_action_.emplace(out_total_, std::move(clear));
  // Prefixes are stored in normal form; one stored before that is normalised here, and
  // one that has no normal form (userinfo, a bad host) covers nothing.
  rules_.prefixes = url::normalPrefixes(result.prefixes);
  result.reported_errors.clear();
  auth_ = std::move(result);
  state_ = State::kAwaitSet;
}

void SessionPolicy::onSetBegin(std::string_view kind, std::string_view urlprefix) {
  if (state_ == State::kAwaitInit) {
    decoder_.fail(ErrorCode::kMalformed, "protocol order violated: set before init");
    return reject(ErrorCode::kMalformed, "protocol order violated: set before init");
  }
  if (state_ != State::kAwaitSet) {
    decoder_.fail(ErrorCode::kMalformed, "protocol order violated");
    return reject(ErrorCode::kMalformed, "protocol order violated: a second set");
  }
  write(proto::encodeSetResultBegin());
  set_result_open_ = true;
  state_ = State::kInSet;
  if (kind == "full") {
    kind_ = SetKind::kFull;
  } else if (kind == "partial" || kind.empty()) {
    kind_ = SetKind::kPartial;
  } else {
    decoder_.fail(ErrorCode::kMalformed, "bad set kind");
    return reject(ErrorCode::kMalformed, "set must be full or partial");
  }
  if (kind_ == SetKind::kFull && !auth_->info.fullset_wanted && auth_->info.fullset_allowed == 0) {
    decoder_.fail(ErrorCode::kFullSetNotAllowed, "full set not allowed");
    return reject(ErrorCode::kFullSetNotAllowed, "full set not allowed now");
  }
  urlprefix_.assign(urlprefix);
}

void SessionPolicy::onUrl(const proto::UrlAttrs& attrs) {
  if (state_ != State::kInSet) return;
  const std::uint64_t cap = maxSetUrls(config_, auth_->quota_files);
  if (++urls_seen_ > cap) {
    decoder_.fail(ErrorCode::kSetTooLarge, "set too large");
    return reject(ErrorCode::kSetTooLarge, "set too large (more than " + std::to_string(cap) + " urls)");
  }
  proto::UrlVerdict v = proto::validateUrl(attrs, urlprefix_, auth_->pid, rules_);
  if (v.code == ErrorCode::kNone && v.notice.op == UrlOp::kUpdate) {
    // Quota (206): the UNS cannot tell a new URL from a refreshed one, so a partial set
    // is refused only what certainly cannot fit — or everything once the bytes stored
    // (counted by the QM, which refuses fetches past the quota with 313) reached the
    // quota; a full set replaces everything and is held to the quota as a whole. The
    // files quota of a partial set is the QM's: it refuses (206, into the provider's
    // error list) each new identity past quota_files, whichever way the set came.
    const AuthResult& a = *auth_;
    const std::uint64_t sz = v.notice.size.value_or(0);
    bool over = a.quota_bytes > 0 && sz > a.quota_bytes;
    if (kind_ == SetKind::kFull) {
      over = over || (a.quota_files > 0 && updates_ + 1 > a.quota_files) ||
             (a.quota_bytes > 0 && declared_bytes_ + sz > a.quota_bytes);
    } else {
      over = over || (a.quota_bytes > 0 && a.used_bytes + sz > a.quota_bytes && sz > 0) ||
             (a.quota_bytes > 0 && a.used_bytes >= a.quota_bytes);
    }
    if (over) {
      v.code = ErrorCode::kQuotaExceeded;
      v.message = "provider quota exceeded";
    }
  }
  if (v.code != ErrorCode::kNone) {
    write(proto::encodeUrlError(v.code, echoAttrs(attrs, urlprefix_), v.message));
    return;
  }
  ++received_;
  // Every valid URL goes on, in order: the QM applies a set in order, so the last one
  // of an identity wins (at the first one's place). No per-identity table is kept.
  const bool update = v.notice.op == UrlOp::kUpdate;
  const std::uint64_t declared = v.notice.size.value_or(0);
  urls_bytes_ += proto::urlSizeHint(v.notice);
  urls_.push_back(std::move(v.notice));
  ++part_urls_;
  if (config_.stream_part_bytes > 0 && urls_bytes_ >= config_.stream_part_bytes) {
    // The set streams from its first full part on; a smaller one goes whole (spoolable).
    if (!streaming_) set_begin_ = SetBegin{auth_->pid, kind_, auth_->info.fullset_wanted};
    streaming_ = true;
    part_ready_ = true;
  }
  if (update) {
    ++updates_;
    declared_bytes_ += declared;
  }
}

void SessionPolicy::onSetEnd() {
  if (state_ != State::kInSet) return;
  state_ = State::kForwarding;
  if (streaming_) {
    part_ready_ = true;  // the rest, possibly empty
    set_end_ = true;
    return;
  }
  SetSubmission s;
  s.pid = auth_->pid;
  s.kind = kind_;
  s.fullset_wanted = auth_->info.fullset_wanted;
  s.count = received_;
  s.urls = std::move(urls_);
  urls_ = {};
  urls_bytes_ = 0;
  submission_ = std::move(s);
}

void SessionPolicy::onSetOutcome(const SetOutcome& outcome) {
  if (state_ != State::kForwarding) return;
  if (outcome.accepted) {
    write(proto::encodeSetAccepted(received_));
    finish(ErrorCode::kNone);
  } else {
    reject(outcome.code == ErrorCode::kNone ? ErrorCode::kOffline : outcome.code, outcome.message);
  }
}

void SessionPolicy::onUnknownDocument(std::string_view ns, std::string_view local) {
  std::string what = "unexpected element {" + std::string(ns) + "}" + std::string(local);
  decoder_.fail(ErrorCode::kMalformed, what);
  reject(ErrorCode::kMalformed, "protocol order violated: " + what);
}

}  // namespace lcc::uns
