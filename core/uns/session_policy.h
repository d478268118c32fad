// session_policy.h — one CP session as a state machine (docs/protocol.md §1): events in,
// actions out, no sockets and no clocks, so it runs the same in a unit test.
//
//   kAwaitInit ──init──▶ kAuthenticating ──ok──▶ kAwaitSet ──set──▶ kInSet ──</set>──▶
//   kForwarding ──outcome──▶ kDone.  Any refusal writes its reply and goes to kDone.
//
// The owner (core/uns/uns_service.cc, or a test) loops:
//   used = onData(bytes)   keep bytes[used..] and feed them again after the next event
//   takeOutput()           bytes to write to the CP, in order
//   takeAuthRequest()      authenticate (UnsCore::authenticate) and call onAuthenticated
//   takeSubmission()       hand the set to the forwarder and call onSetOutcome
//   takeWrittenAction()    after the output written so far is on the wire: what to do
//   finished()             close once the output is written
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "lcc/error_codes.h"
#include "lcc/types.h"
#include "proto/cp_uns.h"

namespace lcc {
class Config;
}

namespace lcc::uns {

// Members with a config key carry no default: fromConfig() (uns_options.cc) reads the
// schema's. Tests start from SessionConfig::fromConfig(Config::defaults()).
struct SessionConfig {
  // uns.max_attribute_length (max_value_length), uns.max_depth; max_elements is not
  // counted by the reader (see maxSetUrls).
  proto::XmlLimits xml;
  // uns.max_set_urls: most <url> elements in a set (132) of a provider without a files
  // quota; a provider with one may send as many as its quota_files when that is more
  // (maxSetUrls), so a full set naming everything it may hold is never refused.
  std::uint64_t max_set_urls = 0;
  std::size_t max_url_length = 0;        // uns.max_url_length
  int slots = 0;                         // qm.slots: the time-of-day slots a <url> may name
  std::vector<std::string> accept_mime;  // accept_mime
  // No config key (the UNS server sets 256 KiB): issue 13: > 0 streams a set once this
  // many bytes of URLs gathered (their <url/> size, proto::urlSizeHint): takeSetBegin()
  // and takePart() then, takePart() again each time as many gathered, takeSetEnd() after the rest at
  // </set>. A smaller set, or with 0 every set, is collected and given as one
  // SetSubmission (takeSubmission()).
  std::size_t stream_part_bytes = 0;

  static SessionConfig fromConfig(const Config& config);
};

// The <url> cap of a set of a provider whose files quota is `quota_files` (0: none).
std::uint64_t maxSetUrls(const SessionConfig& config, std::uint64_t quota_files);

struct AuthRequest {
  std::string id;        // as sent
  std::string password;
};

// What UnsCore::authenticate found.
struct AuthResult {
  ErrorCode code = ErrorCode::kNone;  // kNone: accepted
  std::string message;
  bool throttled = false;  // refused (120) for too many failed inits from the address
  ProviderId pid = 0;
  proto::InitAcceptedInfo info;                   // the init_accepted contents
  std::vector<FetchErrorEntry> reported_errors;   // every error counted in info.error_total
  std::vector<std::string> prefixes;
  std::uint64_t quota_files = 0, quota_bytes = 0, used_files = 0, used_bytes = 0;
};

// A validated set for the forwarder, `count` URLs in the CP's order; an identity named
// twice is there twice (the QM applies a set in order, so the last one wins). A session
// gives the notices it parsed (`urls`); the forwarder encodes them (uns_qm.h) only for
// the TCP form or its spool, and hands them to a QM of the same lccd as they are
// (issue 28). Other submitters (IndexNow, sitemaps) may give `urls_xml`, the <url/>
// elements, instead.
struct SetSubmission {
  ProviderId pid = 0;
  SetKind kind = SetKind::kPartial;
  bool fullset_wanted = false;  // the full set answers the LCC's request (not counted)
  std::uint64_t count = 0;
  std::vector<UrlNotice> urls;
  std::string urls_xml;  // used when `urls` is empty
};

// A streamed set's start, and one part of it (`count` <url/> elements).
struct SetBegin {
  ProviderId pid = 0;
  SetKind kind = SetKind::kPartial;
  bool fullset_wanted = false;
};
struct SetPart {
  std::vector<UrlNotice> urls;  // as SetSubmission
  std::string urls_xml;
  std::uint64_t count = 0;
};

struct SetOutcome {
  bool accepted = false;
  ErrorCode code = ErrorCode::kNone;  // when !accepted
  std::string message;
};

// Done once the bytes written before it are on the wire.
struct WrittenAction {
  enum class Kind { kClearReportedErrors } kind = Kind::kClearReportedErrors;
  ProviderId pid = 0;
  std::uint64_t error_total = 0;
  std::vector<FetchErrorEntry> errors;
};

class SessionPolicy : private proto::CpRequestHandler {
 public:
  enum class State { kAwaitInit, kAuthenticating, kAwaitSet, kInSet, kForwarding, kDone };

  explicit SessionPolicy(const SessionConfig& config);
  ~SessionPolicy() override;

  // Bytes from the CP. Returns how many were used; the rest must be fed again after
  // the next event (authentication or forwarding finished). In kDone everything is
  // used (and dropped).
  std::size_t onData(const char* data, std::size_t n);
  // The CP closed its sending side.
  void onEof();
  void onAuthenticated(AuthResult result);
  void onSetOutcome(const SetOutcome& outcome);
  // No byte from the CP for uns.idle_timeout, or the session outlived uns.session_timeout.
  void onTimeout(bool whole_session);
  // Refuse before reading anything (connection caps, spool full): code 120 or 130.
  void refuse(ErrorCode code, std::string_view message);

  std::string takeOutput();
  // Output offsets: the WrittenAction is due once this many bytes of output (counted
  // from the session's start) are written.
  std::optional<std::pair<std::uint64_t, WrittenAction>> takeWrittenAction();
  std::optional<AuthRequest> takeAuthRequest();
  std::optional<SetSubmission> takeSubmission();
  // Streaming (SessionConfig::stream_part_bytes > 0). onData() stops at a ready part,
  // which holds at most stream_part_bytes plus the URLs of 16 KiB of input.
  std::optional<SetBegin> takeSetBegin();
  std::optional<SetPart> takePart();
  bool takeSetEnd();  // after the last takePart(): end the set, then onSetOutcome()

  State state() const { return state_; }
  bool finished() const { return state_ == State::kDone; }
  // The CP owes us bytes (idle timer runs).
  bool waitingForCp() const {
    return state_ == State::kAwaitInit || state_ == State::kAwaitSet || state_ == State::kInSet;
  }
  ProviderId provider() const { return auth_ ? auth_->pid : 0; }
  bool authenticated() const { return auth_.has_value(); }
  std::uint64_t received() const { return received_; }
  // Code of the refusal that ended the session (kNone when it ended well).
  ErrorCode endCode() const { return end_code_; }

 private:
  void onInit(std::string_view id, std::string_view password) override;
  void onSetBegin(std::string_view kind, std::string_view urlprefix) override;
  void onUrl(const proto::UrlAttrs& attrs) override;
  void onSetEnd() override;
  void onUnknownDocument(std::string_view ns, std::string_view local) override;

  void write(std::string s);
  // Ends the session with `code` in the reply that fits the current state.
  void reject(ErrorCode code, std::string_view message);
  void finish(ErrorCode code);

  SessionConfig config_;
  proto::CpRequestDecoder decoder_;
  State state_ = State::kAwaitInit;
  ErrorCode end_code_ = ErrorCode::kNone;
  std::string out_;
  std::uint64_t out_total_ = 0;  // bytes produced so far (taken or not)
  std::optional<std::pair<std::uint64_t, WrittenAction>> written_action_;
  std::optional<AuthRequest> auth_request_;
  std::optional<AuthResult> auth_;
  proto::UrlRules rules_;
  // The set being read.
  bool set_result_open_ = false;
  SetKind kind_ = SetKind::kPartial;
  std::string urlprefix_;
  std::uint64_t urls_seen_ = 0;
  std::uint64_t received_ = 0;
  std::uint64_t updates_ = 0;            // valid updates so far (quota; a repeated identity counts again)
  std::uint64_t declared_bytes_ = 0;     // sum of declared sz of updates (quota)
  std::vector<UrlNotice> urls_;          // the valid notices so far, in order
  std::size_t urls_bytes_ = 0;           // their <url/> size (proto::urlSizeHint), for the parts
  std::optional<SetSubmission> submission_;
  std::optional<SetBegin> set_begin_;
  std::uint64_t part_urls_ = 0;  // in urls_ (streaming)
  bool streaming_ = false, part_ready_ = false, set_end_ = false;
};

}  // namespace lcc::uns
