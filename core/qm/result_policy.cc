#include "qm/result_policy.h"

#include <algorithm>

namespace lcc::qm {

namespace {

std::uint16_t plusOne(std::uint16_t n) { return static_cast<std::uint16_t>(n + 1); }

// A row the fetch no longer belongs to: the file that came back is deleted and a
// row left as op=nothing goes with the URL's content (the LoCoCa design document §6 "Some Notes").
ResultAction discard(const ResultEvent& e) {
  ResultAction a;
  a.verdict = ResultVerdict::kDiscarded;
  a.delete_file = e.ok && e.has_file;
  a.remove_url = e.row == RowState::kRemoved;
  a.charge_bytes = e.ok && !e.unchanged ? e.size : 0;
  return a;
}

ResultAction success(const ResultEvent& e) {
  ResultAction a;
  if (e.has_file && e.over_quota) {
    // Final (313): the file goes, and the URL is removed as after any final error.
    a.verdict = ResultVerdict::kGiveUp;
    a.delete_file = true;
    a.remove_url = true;
    a.charge_bytes = e.size;
    a.code = ErrorCode::kProviderQuotaExceeded;
    return a;
  }
  if (e.unchanged && !e.content_live) {
    // 304 with nothing stored (a removal raced the fetch): fetch again unconditionally.
    a.verdict = ResultVerdict::kFetchAgain;
    a.bad_count = plusOne(e.bad_count);
    return a;
  }
  a.verdict = e.unchanged ? ResultVerdict::kRefreshed : ResultVerdict::kStored;
  // A newer notice arrived during the fetch: the row stays and is fetched again.
  a.keep_row = e.row == RowState::kNewer;
  a.charge_bytes = e.unchanged ? 0 : e.size;
  return a;
}

ResultAction failure(const ResultEvent& e, const ResultRules& rules) {
  ResultAction a;
  if (e.row == RowState::kNewer) {
    // Fetch the newer notice, from a clean slate.
    a.verdict = ResultVerdict::kFetchAgain;
    return a;
  }
  if (e.gone_removes && e.code == ErrorCode::kNotFound) {
    // "Added, updated or deleted" was for the fetch to settle: deleted.
    a.verdict = ResultVerdict::kGoneAtSite;
    a.remove_url = true;
    return a;
  }
  if (!qm::isRetryableFetchError(e.code) || e.bad_count >= rules.max_retries) {
    a.verdict = ResultVerdict::kGiveUp;
    a.remove_url = true;
    a.code = e.code;
    return a;
  }
  a.bad_count = plusOne(e.bad_count);
  if (isProviderWideFetchError(e.code) || e.retry_after) {
    a.verdict = ResultVerdict::kWaitSet;
    a.delay = e.retry_after ? *e.retry_after : rules.provider_error_delay;
    if (a.delay.count() <= 0) a.delay = Millis(1);
    return a;
  }
  a.verdict = ResultVerdict::kRetryLater;
  a.retry_at = e.mono_now + rules.retry_delay;
  return a;
}

}  // namespace

ResultAction decideResult(const ResultEvent& e, const ResultRules& rules) {
  if (e.row == RowState::kGone || e.row == RowState::kRemoved) return discard(e);
  return e.ok ? success(e) : failure(e, rules);
}

DeleteFailureAction decideDeleteFailure(std::string_view reason, std::uint32_t failures,
                                        const DeleteRetryRules& rules) {
  DeleteFailureAction a;
  if (reason == "unknown-machine") {
    a.wait_for_machine = true;
    return a;
  }
  Millis d = rules.delete_retry;
  for (std::uint32_t k = 1; k < failures && d < rules.delete_retry_max; ++k) d *= 2;
  a.retry_after = std::min(d, rules.delete_retry_max);
  return a;
}

}  // namespace lcc::qm
