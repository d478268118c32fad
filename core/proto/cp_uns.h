// cp_uns.h — the CP ↔ UNS codec (docs/protocol.md §1–2): pure functions, no sockets.
//
// UNS side: CpRequestDecoder turns the CP's bytes (init, then set, kDocuments
// framing) into events; validateUrl() checks one <url> (codes 201–205); the
// encode*() functions write the replies, always with xmlns:lococa on the top element.
// CP side (lcc cp send, tests): encodeInit(), the set pieces, and ReplyDecoder which
// parses init_accepted / init_rejected / set_result.
// THREADS: one decoder per connection, one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lcc/error_codes.h"
#include "lcc/types.h"
#include "proto/xml_reader.h"

namespace lcc::proto {

// The attributes a CP sent on one <url>, in the order sent (known names only:
// c m st b f op mt sz md5 tod). Used to echo them in error containers.
using UrlAttrs = std::vector<std::pair<std::string, std::string>>;

const std::string* findAttr(const UrlAttrs& attrs, std::string_view name);

// ---------------------------------------------------------------------------
// Requests (CP → UNS)

class CpRequestHandler {
 public:
  virtual ~CpRequestHandler() = default;
  // <lococa:init><provider id passwd/></lococa:init>, after its end tag. `id` is the
  // text as sent (the policy checks it is a decimal provider number).
  virtual void onInit(std::string_view id, std::string_view password) = 0;
  // <lococa:set set="…" urlprefix="…"> opened. `kind` as sent ("" when absent).
  virtual void onSetBegin(std::string_view kind, std::string_view urlprefix) = 0;
  // `attrs` is the decoder's and is reused for the next <url>: copy what you keep.
  virtual void onUrl(const UrlAttrs& attrs) = 0;
  virtual void onSetEnd() = 0;
  // A top-level element that is neither init nor set (its name), at its start.
  virtual void onUnknownDocument(std::string_view ns, std::string_view local) = 0;
};

// Feeds bytes into the handler. Between documents the decoder stops and waits for
// resume(): the session decides (after authentication) whether to go on.
class CpRequestDecoder {
 public:
  CpRequestDecoder(CpRequestHandler& handler, XmlLimits limits);
  ~CpRequestDecoder();
  CpRequestDecoder(const CpRequestDecoder&) = delete;
  CpRequestDecoder& operator=(const CpRequestDecoder&) = delete;

  // Parses as much of data as belongs to the current document; returns the bytes used
  // (fewer than n when a document ended: pass the rest again, after the handler's
  // reaction, to start the next document).
  std::size_t feed(const char* data, std::size_t n);
  // Refuses the input from a handler callback (stops parsing).
  void fail(ErrorCode code, std::string message);
  bool failed() const;
  ErrorCode error() const;
  const std::string& errorMessage() const;
  bool inDocument() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ---------------------------------------------------------------------------
// URL validation (docs/protocol.md §1.2)

struct UrlRules {
  std::vector<std::string> accept_mime;  // "type/subtype" or "type/*"
  std::vector<std::string> prefixes;     // the provider's prefixes, in normal form (url::normalizePrefix)
  std::size_t max_url_length = 2048;     // of the normal form
  int tod_slots = 24;                    // qm.slots: tod ranges are within 0..tod_slots
};

struct UrlVerdict {
  ErrorCode code = ErrorCode::kNone;  // kNone: `notice` is valid
  std::string message;                // short English detail
  UrlNotice notice;
};

// `urlprefix` is put before c/b/f that do not start with a scheme. The resolved c, f
// and b are put in their normal form (url/url_norm.h; 201 when they have none), and c
// and f must lie under one of rules.prefixes segment by segment (202). Quota (206) is
// not checked here (it needs the set's running totals): see core/uns/session_policy.h.
UrlVerdict validateUrl(const UrlAttrs& attrs, std::string_view urlprefix, ProviderId pid, const UrlRules& rules);

// urlprefix + url unless url starts with a scheme ("x:" with x a scheme name).
std::string resolveUrl(std::string_view urlprefix, std::string_view url);
bool mimeAccepted(std::string_view mime, const std::vector<std::string>& patterns);
// "0-8,22-24" → sorted, merged, canonical; nullopt when malformed or out of 0..slots.
std::optional<std::string> canonicalTod(std::string_view tod, int slots);
// "word:stuff", 1–100 chars, no white space.
bool validViewTag(std::string_view st);

// ---------------------------------------------------------------------------
// Replies (UNS → CP)

struct InitAcceptedInfo {
  std::uint64_t seq = 0;
  std::string last_ip;                      // "" on the first connection
  std::optional<std::int64_t> last_time;    // seconds; nullopt on the first connection
  std::vector<std::string> mime;
  std::uint64_t files_used = 0, files_free = 0;
  std::uint64_t space_used = 0, space_free = 0;
  std::uint64_t fullset_allowed = 0;
  bool fullset_wanted = false;
  std::string fullset_reason;               // "" when not wanted
  std::uint64_t error_total = 0;
  std::vector<FetchErrorEntry> errors;      // the ones to list (already capped)
  std::uint64_t processing = 0;
};

std::string encodeInitAccepted(const InitAcceptedInfo& info);
std::string encodeInitRejected(ErrorCode code, std::string_view message);

// set_result is written in pieces, while the set is read.
std::string encodeSetResultBegin();  // <lococa:set_result xmlns:lococa="…"><errors>
// One error container: the CP's attributes (c/b/f resolved) plus code; message as text.
std::string encodeUrlError(ErrorCode code, const UrlAttrs& attrs, std::string_view message);
std::string encodeSetAccepted(std::uint64_t received);  // </errors><set_accepted …/></lococa:set_result>
std::string encodeSetRejected(ErrorCode code, std::string_view message);  // </errors><set_rejected …>…

// ---------------------------------------------------------------------------
// CP side

std::string encodeInit(std::string_view id, std::string_view password);
std::string encodeSetBegin(bool full, std::string_view urlprefix);
std::string encodeUrlElement(const UrlAttrs& attrs);
// The same element appended from a parsed one's un-namespaced attributes, in order
// (`lcc cp send` re-encodes its input so, without a copy of each attribute).
void appendUrlElement(std::string& out, const XmlAttrs& attrs);
std::string encodeSetEnd();

struct UrlError {
  ErrorCode code = ErrorCode::kNone;
  UrlAttrs attrs;  // without code
  std::string message;
};

struct CpReply {
  enum class Kind { kNone, kInitAccepted, kInitRejected, kSetResult } kind = Kind::kNone;
  // init_accepted
  InitAcceptedInfo init;
  std::vector<UrlError> init_errors;  // the <url> containers of processing_status
  // init_rejected / set_rejected
  ErrorCode code = ErrorCode::kNone;
  std::string message;
  // set_result
  std::vector<UrlError> set_errors;
  bool accepted = false;
  std::uint64_t received = 0;
};

// Parses the UNS's replies (kDocuments framing); each complete reply goes to `on_reply`.
class ReplyDecoder {
 public:
  explicit ReplyDecoder(XmlLimits limits = {});
  ~ReplyDecoder();
  ReplyDecoder(const ReplyDecoder&) = delete;
  ReplyDecoder& operator=(const ReplyDecoder&) = delete;

  // Feeds bytes; returns the replies completed by them (the last may be partial and
  // is returned by a later feed). Bytes after a malformed reply are ignored.
  std::vector<CpReply> feed(std::string_view bytes);
  // Set-result errors seen so far in the reply being read (to print them as they come).
  std::vector<UrlError> takeStreamedErrors();
  bool failed() const;
  const std::string& errorMessage() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace lcc::proto
