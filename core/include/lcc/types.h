// lcc/types.h — the plain value types that cross component and plugin boundaries.
//
// WHO: every interface in this folder. THREADS: plain values, no sharing.
// Names follow the design document so the code reads like it: UrlKey (URLKEY),
// PSetId (PSETID), TimeSlot (STARTTIMESLOT), QueueEntry (a QDB row), PSetRecord
// (a QPSDB row), DeleteRequest (an FSMDB row), ContentRecord (an LCC DB row),
// ProviderRecord (a PIDB row).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lcc/error_codes.h"

namespace lcc {

using ProviderId = std::uint32_t;  // 0 is never a valid provider
using PSetId = std::uint64_t;      // provider-set id: monotonic, never reused
using ChangeSeq = std::uint64_t;   // LCC DB change sequence: monotonic, 0 = "before everything"
using TimeSlot = std::int32_t;     // time-of-day slot number, or kSlotNow
constexpr TimeSlot kSlotNow = -1;  // "fetch now" (the design's STARTTIMESLOT = -1)

using Millis = std::chrono::milliseconds;
using WallTime = std::chrono::sys_time<Millis>;       // wall clock, ms since the Unix epoch
using MonoTime = std::chrono::steady_clock::time_point;  // for intervals only

inline std::int64_t toUnixMillis(WallTime t) { return t.time_since_epoch().count(); }
inline WallTime fromUnixMillis(std::int64_t ms) { return WallTime(Millis(ms)); }

// ---------------------------------------------------------------------------
// URL identity: (provider, resolved conceptual URL, MIME type) — docs/protocol.md §1.2.
struct UrlKey {
  ProviderId pid = 0;
  std::string url;   // the resolved conceptual URL ("c" after urlprefix)
  std::string mime;  // "type/subtype"

  friend bool operator==(const UrlKey&, const UrlKey&) = default;
};

// The byte encoding every store uses for a UrlKey: 4-byte big-endian pid, the URL,
// a NUL, the MIME type. Big-endian pid first makes "all of provider P" a key range
// in an ordered store. URLs and MIME types never contain NUL (the UNS refuses them).
std::string encodeUrlKey(const UrlKey& k);

// Inverse of encodeUrlKey; nullopt when `bytes` is not an encoded key.
std::optional<UrlKey> decodeUrlKey(std::string_view bytes);

// The 4-byte prefix shared by every encoded key of provider `pid`.
std::string encodeProviderPrefix(ProviderId pid);

// ---------------------------------------------------------------------------
// One URL notification after the UNS validated it (docs/protocol.md §1.2).
// kCheck never comes from a CP: it is a notice of IndexNow or of a sitemap poll, where
// "added, updated or deleted" is settled by the fetch. It is fetched as an update, and a
// 404 or 410 removes the URL as a delete would, instead of being a fetch error
// (docs/protocol.md §10, qm/result_policy.h).
enum class UrlOp : std::uint8_t { kUpdate = 0, kDelete = 1, kCheck = 2 };
inline constexpr std::uint8_t kUrlOpMax = 2;  // the highest stored value (store decoders check it)

struct UrlNotice {
  UrlKey key;                          // pid, resolved c, m
  UrlOp op = UrlOp::kUpdate;
  std::string view_tag;                // "st"; empty when absent or malformed
  std::optional<std::string> browse;   // "b" resolved; nullopt: same as c; "": not browsable
  std::string fetch;                   // "f" resolved; empty: same as c
  std::optional<std::int64_t> mtime;   // "mt", seconds since the epoch
  std::optional<std::uint64_t> size;   // "sz"
  std::string md5;                     // "md5", 32 lower-case hex digits, or empty
  std::string tod;                     // "tod" in canonical form ("0-8,22-24"), empty: any time

  const std::string& fetchUrl() const { return fetch.empty() ? key.url : fetch; }
  std::string browseUrl() const { return browse ? *browse : key.url; }
  friend bool operator==(const UrlNotice&, const UrlNotice&) = default;
};

enum class SetKind : std::uint8_t { kPartial = 0, kFull = 1 };

// ---------------------------------------------------------------------------
// QDB, QPSDB, FSMDB (design document §6).
enum class QueueOp : std::uint8_t {
  kFetch = 0,    // fetch the URL when its turn comes
  kNothing = 1,  // a delete arrived after the fetch was queued: drop it, remove the content
};

// One QDB row: a URL waiting for its turn. Rows of one (pset, slot) list are linked
// through `next` in fetch order; QPSDB holds the list's first and last key.
struct QueueEntry {
  UrlNotice notice;          // the last notification for this identity (last wins)
  QueueOp op = QueueOp::kFetch;
  PSetId pset = 0;           // the set whose list holds this row
  TimeSlot slot = kSlotNow;  // the list's start slot
  std::string next;          // encodeUrlKey() of the next row in the list; empty: last
  std::uint16_t bad_count = 0;  // retryable failures so far ("marked bad")
  WallTime queued{};         // when the first notification for this row arrived

  friend bool operator==(const QueueEntry&, const QueueEntry&) = default;
};

// One QPSDB row. (pset, slot) is unique.
struct PSetRecord {
  PSetId pset = 0;
  TimeSlot slot = kSlotNow;
  ProviderId pid = 0;
  std::int32_t priority = 0;   // copy of the provider's priority; higher is fetched first
  std::string first;           // encodeUrlKey() of the list head
  std::string last;            // encodeUrlKey() of the list tail
  std::uint64_t count = 0;     // rows on the list

  friend bool operator==(const PSetRecord&, const PSetRecord&) = default;
};

// One FSMDB row: content to unlink on `machine` once its BOT-M is reachable.
struct DeleteRequest {
  std::string machine;
  std::string filename;  // relative to that machine's content directory
  WallTime since{};

  friend bool operator==(const DeleteRequest&, const DeleteRequest&) = default;
};

// ---------------------------------------------------------------------------
// LCC DB (design document §6 "Fetching", §9; docs/protocol.md §3).
struct ContentRecord {
  UrlKey key;
  ChangeSeq seq = 0;       // assigned by the QM on every store or removal
  bool deleted = false;    // a tombstone: the URL was removed at `stored`
  std::string view_tag;
  std::optional<std::string> browse;
  std::string fetch;
  std::optional<std::int64_t> mtime;  // Last-Modified of the fetch, else the CP's "mt"
  std::uint64_t size = 0;             // bytes stored
  std::string md5;                    // of the bytes stored
  std::string machine;                // machine id of the BOT-M holding the file
  std::string filename;               // relative to that machine's content directory
  WallTime stored{};                  // when stored or removed ("since time" filters on it)
  WallTime refreshed{};               // last time a notification confirmed it (ageing)
  // What the CP declared at the last fetch: an update declaring the same triple is not fetched.
  std::optional<std::int64_t> declared_mtime;
  std::optional<std::uint64_t> declared_size;
  std::string declared_md5;
  // The seq of the put that stored this URL over no record or over a tombstone (when it
  // became stored); later puts of the stored URL keep it. Set by the store: the value of
  // a put is ignored. 0: unknown (a record written before stores kept it). ResourceSync's
  // Change List says `created` for a record whose created_seq is above its `since`.
  ChangeSeq created_seq = 0;
  // The ETag of the response stored or last confirmed (FetchResult::etag), sent back as
  // If-None-Match; empty: none. At most kMaxEtagBytes, isValidEtag().
  std::string etag;
  // The LCC store (lcc.store_id) a merged answer of several LCCs took the record from
  // (docs/protocol.md §3.4); the XML answer writes it as `source=`. Empty elsewhere:
  // stores neither keep nor fill it.
  std::string source;

  friend bool operator==(const ContentRecord&, const ContentRecord&) = default;
};

// ---------------------------------------------------------------------------
// PIDB (design document §3, §4, §13).
enum class ProviderState : std::uint8_t {
  kPending = 0,    // registered, secret not verified yet
  kActive = 1,
  kSuspended = 2,  // by an administrator, or by the RS when re-verification failed
  kRemoving = 3,   // `lcc provider remove`: the QM drops the queued URLs, then the record
  kPurging = 4,    // `remove --purge`: the same, and the content is removed
};

enum class FullSetReason : std::uint8_t {
  kNone = 0, kCacheCrash, kOldFiles, kExpiredFiles, kFirstConnect, kAdmin,
};

// "cache-crash", "old-files", ... as /status and the admin API show it; "" for kNone.
std::string_view fullSetReasonName(FullSetReason r);

// A fetch that failed for good, kept for the CP's next init_accepted.
struct FetchErrorEntry {
  UrlNotice notice;               // what the CP sent for the URL
  ErrorCode code = ErrorCode::kNone;
  int http_status = 0;            // 0 when there was no HTTP answer
  std::string message;            // short English text
  WallTime when{};

  friend bool operator==(const FetchErrorEntry&, const FetchErrorEntry&) = default;
};

struct ProviderRecord {
  ProviderId id = 0;
  ProviderState state = ProviderState::kPending;
  std::string state_reason;             // why suspended (sessions get 111 with it); "" otherwise
  std::string password_hash;            // a salted, slow hash; never the password
  std::vector<std::string> prefixes;    // registered URL prefixes
  std::int32_t priority = 0;            // higher is fetched first
  std::uint64_t bandwidth = 0;          // bytes per second, 0 = unlimited
  std::uint64_t quota_files = 0;        // 0 = unlimited
  std::uint64_t quota_bytes = 0;        // 0 = unlimited
  std::uint64_t used_files = 0;
  std::uint64_t used_bytes = 0;
  // Registration (RS): the secret to find at secret_url. Pending: valid until
  // reg_expires. Active: the secret is fetched again (re-verification) from reg_expires on.
  std::string secret;
  std::string secret_url;
  std::string contact;
  WallTime reg_expires{};
  // Connections (UNS).
  std::uint64_t conn_seq = 0;
  std::string last_ip;
  std::optional<WallTime> last_connect;
  // Full sets.
  std::uint32_t fullsets_used = 0;      // unsolicited full sets in the current period
  WallTime fullset_period_start{};
  bool fullset_wanted = false;          // sticky until a full set is accepted
  FullSetReason fullset_reason = FullSetReason::kNone;
  // Fetch errors since they were last reported.
  std::uint64_t error_total = 0;
  std::vector<FetchErrorEntry> errors;  // bounded by the configured count
  WallTime created{};
  // Sitemap polling (docs/protocol.md §11): the sitemap or sitemap index the LCC reads
  // every sitemap_interval, sending what changed as a partial set; empty: none.
  std::string sitemap_url;
  Millis sitemap_interval{0};           // 0: sitemap.default_interval

  friend bool operator==(const ProviderRecord&, const ProviderRecord&) = default;
};

// ---------------------------------------------------------------------------
// Fetching (docs/protocol.md §4; Fetcher).

// An entity tag as the LCC keeps it (ETag of a response, If-None-Match of a request):
// the header value without surrounding white space, 1 to kMaxEtagBytes bytes of
// printable ASCII (0x21-0x7E and the space; no control character, no CR or LF, no
// byte above 0x7E: it crosses XML links and goes back into a request header). A
// response's ETag that is not valid is not kept; the fetch is still stored.
inline constexpr std::size_t kMaxEtagBytes = 256;
inline bool isValidEtag(std::string_view v) {
  if (v.empty() || v.size() > kMaxEtagBytes || v.front() == ' ' || v.back() == ' ') return false;
  for (char c : v) {
    if (c < 0x20 || c > 0x7E) return false;
  }
  return true;
}

// Which redirects a fetch follows (config fetch.redirects); any other ends it with 310.
enum class RedirectPolicy : std::uint8_t {
  kPrefix = 0,  // a target under one of FetchRequest::redirect_prefixes (none given: no redirect)
  kHost = 1,    // a target on the host of FetchRequest::url (scheme and port may change)
  kNone = 2,    // no redirect at all
};

// "prefix", "host", "none": the values of fetch.redirects and of the links' attribute.
std::string_view redirectPolicyName(RedirectPolicy p);
std::optional<RedirectPolicy> parseRedirectPolicy(std::string_view s);

// One fetch: the single request every hop uses, as FetchResult is its answer. The QM
// makes it and sends it to a BOT-M, a parent BOT-M forwards it, the BOT-M hands it to a
// robot with the file it chose, the robot to its fetcher with a temporary name; the RS
// and the UNS give theirs to a fetcher directly. Each codec converts only at its own wire
// edge and carries only its hop's fields (docs/internal-protocols.md §2, §3: <fetch>
// mime, since, maxsize, md5, file, redirects, scope).
struct FetchRequest {
  std::uint64_t id = 0;            // the sender's id, echoed in the result (each hop its own)
  std::string url;                 // http or https
  // Where the body goes, an absolute path. On the robot protocol the final file the BOT-M
  // chose (`file`); for a fetcher the temporary file the robot writes and renames. The
  // BOT-M link carries none: the leaf BOT-M chooses the name.
  std::string path;
  std::string expected_mime;       // declared type; a mismatch is 307 (empty: no check)
  // Conditional fetch: seconds since the epoch, as FetchResult::last_modified and
  // ContentRecord::mtime (HTTP's If-Modified-Since has one-second granularity).
  std::optional<std::int64_t> if_modified_since;
  // Conditional fetch: the stored ETag (ContentRecord::etag), sent as If-None-Match;
  // empty: none. A 304 to either condition is FetchResult::unchanged.
  std::string if_none_match;
  std::uint64_t max_size = 0;      // 0: the fetcher's own limit
  // Verify when non-empty and the fetcher is so configured. The BOT-M link carries it,
  // the robot protocol does not.
  std::string expected_md5;
  RedirectPolicy redirects = RedirectPolicy::kPrefix;
  std::vector<std::string> redirect_prefixes;  // the provider's prefixes, in the URL normal form
  // Robot to fetcher only (bot.max_response_head; no link carries it): keep the final
  // response's status line and header lines (FetchResult::response_head) when they fit
  // in this many bytes; 0: not kept.
  std::uint64_t max_response_head = 0;
  // The fetch lease (issue 27 §3): how long after it received this request the
  // receiver may still start an HTTP request for it, on its own monotonic clock, unless
  // a renewal (proto::LinkPing::lease) extends it; past it the fetch is abandoned and
  // answered 130, nothing fetched. Zero: no lease (a sender without one). The QM sets it
  // (qm.fetch_lease); each hop passes on what is left of it.
  Millis lease{0};

  friend bool operator==(const FetchRequest&, const FetchRequest&) = default;
};

// One fetch's outcome: the single record every hop uses. A fetcher fills it, the robot
// answers it to its BOT-M, the BOT-M adds machine and filename and passes it up, the QM
// stores it. Each codec converts only at its own wire edge (docs/internal-protocols.md:
// retry_after is whole seconds on the wire, mt an RFC 3339 time).
struct FetchResult {
  std::uint64_t id = 0;                  // the id of the request it answers (each hop its own)
  ErrorCode code = ErrorCode::kNone;     // kNone on success
  int http_status = 0;                   // 0 when there was no HTTP answer
  std::string machine;                   // from the BOT-M: the machine holding the file
  std::string filename;                  // from the BOT-M: relative to that machine's content directory
  std::string mime;                      // Content-Type without parameters
  std::uint64_t size = 0;
  std::string md5;
  std::optional<std::int64_t> last_modified;  // seconds since the epoch (as ContentRecord::mtime)
  bool unchanged = false;                // 304: nothing was written
  std::string etag;                      // the response's ETag (also of a 304), isValidEtag(); empty: none
  std::optional<Millis> retry_after;     // from a 429/503
  std::string message;                   // short English detail for errors
  // The final response's status line and header lines as received, ending with the
  // empty line ("HTTP/1.1 200 OK\r\n...\r\n\r\n"); empty when not asked for
  // (FetchRequest::max_response_head 0) or larger than that. Only the robot reads it:
  // it keeps it beside the content (core/bot/README.md), no link carries it.
  std::string response_head;

  bool ok() const { return code == ErrorCode::kNone; }
  friend bool operator==(const FetchResult&, const FetchResult&) = default;
};

}  // namespace lcc
