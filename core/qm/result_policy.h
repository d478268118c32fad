// result_policy.h — what one fetch result does to the queue (the LoCoCa design document §6 "Fetching"):
// a pure function, events in and an action out. No stores, no clock, no I/O: the QM
// gathers the facts (the outcome, the QDB row as it is now, the clock reading), asks
// decideResult(), and only executes the action it gets back
// (queue_manager_result.cc). tests/qm/result_policy_test.cc holds it as a table.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "lcc/error_codes.h"
#include "lcc/types.h"

namespace lcc::qm {

// THE retry rule: a failed fetch with one of these codes is tried again (up to
// qm.max_retries); every other code is final and goes to the PIDB error list.
// kNone and kInternal/kOffline (the BOT-M or robot failed, not the site) retry too.
constexpr bool isRetryableFetchError(ErrorCode code) {
  switch (code) {
    case ErrorCode::kNone:
    case ErrorCode::kServerError:
    case ErrorCode::kFetchTimeout:
    case ErrorCode::kDnsFailure:
    case ErrorCode::kConnectFailure:
    case ErrorCode::kInternal:
    case ErrorCode::kOffline:
      return true;
    default:
      return false;
  }
}

// The QDB row of the fetched URL when its result comes back.
enum class RowState : std::uint8_t {
  kGone,     // no row (removed by a full set, ageing, ...)
  kRemoved,  // op=nothing: a removal notification arrived during the fetch
  kCurrent,  // the notice that was fetched is still the row's notice
  kNewer,    // a newer notice for the URL arrived during the fetch
};

struct ResultEvent {
  // The outcome, as the BOT-M reported it.
  bool ok = false;
  bool unchanged = false;  // 304
  bool has_file = false;   // ok, not unchanged, names a file
  ErrorCode code = ErrorCode::kNone;
  std::optional<Millis> retry_after;
  std::uint64_t size = 0;
  // The queue.
  RowState row = RowState::kCurrent;
  std::uint16_t bad_count = 0;  // the row's retryable failures so far
  bool content_live = false;    // a live LCC DB record exists (only consulted for a 304)
  // The body would take the provider's stored bytes past its quota_bytes (has_file only).
  bool over_quota = false;
  // The fetched notice's op is check (IndexNow, a sitemap poll): a 404 or 410 (kNotFound)
  // says the site removed the URL.
  bool gone_removes = false;
  // The clock.
  MonoTime mono_now{};
};

// The QM's settings of the same names (QmOptions, from the qm.* keys); no defaults here:
// they are the schema's (core/common/config/schema.cc).
struct ResultRules {
  std::uint32_t max_retries = 0;  // qm.max_retries
  Millis retry_delay{};           // qm.retry_delay
  Millis provider_error_delay{};  // qm.provider_error_delay
};

enum class ResultVerdict : std::uint8_t {
  kDiscarded,   // the row was removed or is gone: drop what came back
  kStored,      // new content: an LCC DB record with a new seq
  kRefreshed,   // 304: the record is refreshed
  kFetchAgain,  // the row stays where it is and goes out again
  kWaitSet,     // provider-wide error: the whole set waits `delay`, the row keeps its place
  kRetryLater,  // the row goes to the end of its set, the provider retries at `retry_at`
  kGiveUp,      // final: `code` into the PIDB error list, the URL removed
  kGoneAtSite,  // op=check answered 404/410: the URL removed as by a delete notice, no error
};

struct ResultAction {
  ResultVerdict verdict = ResultVerdict::kDiscarded;
  bool delete_file = false;        // the file that came back goes to the delete manager
  bool remove_url = false;         // the URL's content is removed and its row dropped
  bool keep_row = false;           // stored/refreshed, but a newer notice keeps the row queued
  std::uint16_t bad_count = 0;     // the row's bad count when it stays queued
  std::uint64_t charge_bytes = 0;  // charged to the provider's bandwidth
  Millis delay{0};                 // kWaitSet
  MonoTime retry_at{};             // kRetryLater
  ErrorCode code = ErrorCode::kNone;  // kGiveUp

  friend bool operator==(const ResultAction&, const ResultAction&) = default;
};

ResultAction decideResult(const ResultEvent& e, const ResultRules& rules);

// What a failed file delete does (the delete manager, queue_manager_deletes.cc).
// `unknown-machine`: the link cannot reach the machine; the delete waits until a link
// lists it. Any other reason (in-use, io-error, ...) is about that one file: it is
// tried again by itself after qm.delete_retry, doubling per failure up to
// qm.delete_retry_max; the machine's other deletes go on.
struct DeleteRetryRules {
  Millis delete_retry{};      // qm.delete_retry: the first back-off
  Millis delete_retry_max{};  // qm.delete_retry_max: its ceiling
};
struct DeleteFailureAction {
  bool wait_for_machine = false;
  Millis retry_after{0};  // when !wait_for_machine

  friend bool operator==(const DeleteFailureAction&, const DeleteFailureAction&) = default;
};
// `failures`: how often this file's delete has failed, this failure included (>= 1).
DeleteFailureAction decideDeleteFailure(std::string_view reason, std::uint32_t failures, const DeleteRetryRules& rules);

}  // namespace lcc::qm
