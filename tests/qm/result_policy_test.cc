// What a fetch result does to the queue (qm/result_policy.h), as a table: each row is
// one situation (the outcome, the QDB row, its bad count) and the action expected.
#include "qm/result_policy.h"

#include <gtest/gtest.h>

#include <chrono>
#include <ostream>

namespace lcc::qm {

// How gtest prints an action when a row fails.
std::ostream& operator<<(std::ostream& os, const ResultAction& a) {
  return os << "{verdict " << int(a.verdict) << ", delete_file " << a.delete_file << ", remove_url " << a.remove_url
            << ", keep_row " << a.keep_row << ", bad " << a.bad_count << ", charge " << a.charge_bytes << ", delay "
            << a.delay.count() << "ms, retry_at " << a.retry_at.time_since_epoch().count() << ", code " << int(a.code) << "}";
}

namespace {

using std::chrono::seconds;
using E = ErrorCode;
using R = RowState;
using V = ResultVerdict;

const MonoTime kNow = MonoTime(seconds(1000));
const ResultRules kRules{3, Millis(60'000), Millis(600'000)};

// Outcomes.
ResultEvent stored(R row, std::uint64_t size = 500) {
  ResultEvent e;
  e.ok = true;
  e.has_file = true;
  e.size = size;
  e.row = row;
  e.mono_now = kNow;
  return e;
}
ResultEvent overQuota(R row) {
  ResultEvent e = stored(row);
  e.over_quota = true;
  return e;
}
ResultEvent notModified(R row, bool live = true, std::uint16_t bad = 0) {
  ResultEvent e;
  e.ok = true;
  e.unchanged = true;
  e.row = row;
  e.bad_count = bad;
  e.content_live = live;
  e.mono_now = kNow;
  return e;
}
ResultEvent failed(E code, R row, std::uint16_t bad = 0, std::optional<Millis> retry_after = std::nullopt) {
  ResultEvent e;
  e.code = code;
  e.retry_after = retry_after;
  e.row = row;
  e.bad_count = bad;
  e.mono_now = kNow;
  return e;
}

// The same outcome for a notice with op=check (IndexNow, sitemap polls).
ResultEvent checked(ResultEvent e) {
  e.gone_removes = true;
  return e;
}

struct Row {
  const char* what;
  ResultEvent in;
  ResultAction out;
};

const Row kTable[] = {
    // Success.
    {"stored", stored(R::kCurrent), {.verdict = V::kStored, .charge_bytes = 500}},
    {"stored, newer notice came", stored(R::kNewer), {.verdict = V::kStored, .keep_row = true, .charge_bytes = 500}},
    {"stored, row gone", stored(R::kGone), {.verdict = V::kDiscarded, .delete_file = true, .charge_bytes = 500}},
    {"stored, removed during the fetch", stored(R::kRemoved),
     {.verdict = V::kDiscarded, .delete_file = true, .remove_url = true, .charge_bytes = 500}},
    // Success past the provider's byte quota: final, 313.
    {"stored past the quota", overQuota(R::kCurrent),
     {.verdict = V::kGiveUp, .delete_file = true, .remove_url = true, .charge_bytes = 500, .code = E::kProviderQuotaExceeded}},
    {"past the quota, newer notice came", overQuota(R::kNewer),
     {.verdict = V::kGiveUp, .delete_file = true, .remove_url = true, .charge_bytes = 500, .code = E::kProviderQuotaExceeded}},
    {"past the quota, row gone", overQuota(R::kGone), {.verdict = V::kDiscarded, .delete_file = true, .charge_bytes = 500}},
    // 304.
    {"304", notModified(R::kCurrent), {.verdict = V::kRefreshed}},
    {"304, newer notice came", notModified(R::kNewer), {.verdict = V::kRefreshed, .keep_row = true}},
    {"304 with nothing stored", notModified(R::kCurrent, false, 1), {.verdict = V::kFetchAgain, .bad_count = 2}},
    {"304 with nothing stored, newer notice", notModified(R::kNewer, false), {.verdict = V::kFetchAgain, .bad_count = 1}},
    {"304, row gone", notModified(R::kGone), {.verdict = V::kDiscarded}},
    {"304, removed during the fetch", notModified(R::kRemoved), {.verdict = V::kDiscarded, .remove_url = true}},
    // Errors on a row that changed.
    {"error, row gone", failed(E::kServerError, R::kGone), {.verdict = V::kDiscarded}},
    {"error, removed during the fetch", failed(E::kNotFound, R::kRemoved), {.verdict = V::kDiscarded, .remove_url = true}},
    {"error, newer notice came", failed(E::kNotFound, R::kNewer, 2), {.verdict = V::kFetchAgain, .bad_count = 0}},
    // Retryable, one URL.
    {"303 first time", failed(E::kServerError, R::kCurrent),
     {.verdict = V::kRetryLater, .bad_count = 1, .retry_at = kNow + Millis(60'000)}},
    {"304 timeout, third time", failed(E::kFetchTimeout, R::kCurrent, 2),
     {.verdict = V::kRetryLater, .bad_count = 3, .retry_at = kNow + Millis(60'000)}},
    {"140 internal", failed(E::kInternal, R::kCurrent),
     {.verdict = V::kRetryLater, .bad_count = 1, .retry_at = kNow + Millis(60'000)}},
    {"130 offline", failed(E::kOffline, R::kCurrent),
     {.verdict = V::kRetryLater, .bad_count = 1, .retry_at = kNow + Millis(60'000)}},
    {"303 after max_retries", failed(E::kServerError, R::kCurrent, 3),
     {.verdict = V::kGiveUp, .remove_url = true, .code = E::kServerError}},
    // Retryable, the whole provider.
    {"305 dns", failed(E::kDnsFailure, R::kCurrent), {.verdict = V::kWaitSet, .bad_count = 1, .delay = Millis(600'000)}},
    {"306 connect", failed(E::kConnectFailure, R::kCurrent, 1),
     {.verdict = V::kWaitSet, .bad_count = 2, .delay = Millis(600'000)}},
    {"306 after max_retries", failed(E::kConnectFailure, R::kCurrent, 3),
     {.verdict = V::kGiveUp, .remove_url = true, .code = E::kConnectFailure}},
    {"303 with Retry-After", failed(E::kServerError, R::kCurrent, 0, Millis(120'000)),
     {.verdict = V::kWaitSet, .bad_count = 1, .delay = Millis(120'000)}},
    {"305 with Retry-After", failed(E::kDnsFailure, R::kCurrent, 0, Millis(5'000)),
     {.verdict = V::kWaitSet, .bad_count = 1, .delay = Millis(5'000)}},
    {"Retry-After 0", failed(E::kServerError, R::kCurrent, 0, Millis(0)),
     {.verdict = V::kWaitSet, .bad_count = 1, .delay = Millis(1)}},
    // Final at once.
    {"301 not found", failed(E::kNotFound, R::kCurrent), {.verdict = V::kGiveUp, .remove_url = true, .code = E::kNotFound}},
    {"301 with Retry-After", failed(E::kNotFound, R::kCurrent, 0, Millis(120'000)),
     {.verdict = V::kGiveUp, .remove_url = true, .code = E::kNotFound}},
    {"302 denied", failed(E::kAccessDenied, R::kCurrent), {.verdict = V::kGiveUp, .remove_url = true, .code = E::kAccessDenied}},
    {"307 mime", failed(E::kMimeMismatch, R::kCurrent), {.verdict = V::kGiveUp, .remove_url = true, .code = E::kMimeMismatch}},
    {"308 too large", failed(E::kTooLarge, R::kCurrent), {.verdict = V::kGiveUp, .remove_url = true, .code = E::kTooLarge}},
    {"311 refused", failed(E::kAddressRefused, R::kCurrent),
     {.verdict = V::kGiveUp, .remove_url = true, .code = E::kAddressRefused}},
    // op=check: the fetch settles "added, updated or deleted"; 404/410 (301) is a removal.
    {"check, 301: gone at the site", checked(failed(E::kNotFound, R::kCurrent)),
     {.verdict = V::kGoneAtSite, .remove_url = true}},
    {"check, 301 after retries", checked(failed(E::kNotFound, R::kCurrent, 2, Millis(5'000))),
     {.verdict = V::kGoneAtSite, .remove_url = true}},
    {"check, 301, newer notice came", checked(failed(E::kNotFound, R::kNewer)), {.verdict = V::kFetchAgain}},
    {"check, 301, removed during the fetch", checked(failed(E::kNotFound, R::kRemoved)),
     {.verdict = V::kDiscarded, .remove_url = true}},
    {"check, stored", checked(stored(R::kCurrent)), {.verdict = V::kStored, .charge_bytes = 500}},
    {"check, 302 denied stays an error", checked(failed(E::kAccessDenied, R::kCurrent)),
     {.verdict = V::kGiveUp, .remove_url = true, .code = E::kAccessDenied}},
    {"check, 312 other HTTP status stays an error", checked(failed(E::kHttpOther, R::kCurrent)),
     {.verdict = V::kGiveUp, .remove_url = true, .code = E::kHttpOther}},
    {"check, 303 is retried", checked(failed(E::kServerError, R::kCurrent)),
     {.verdict = V::kRetryLater, .bad_count = 1, .retry_at = kNow + Millis(60'000)}},
};


TEST(ResultPolicy, Table) {
  for (const Row& row : kTable) {
    EXPECT_EQ(decideResult(row.in, kRules), row.out) << row.what;
  }
}

TEST(ResultPolicy, RetryLimitComesFromTheRules) {
  ResultRules none = kRules;
  none.max_retries = 0;
  EXPECT_EQ(decideResult(failed(E::kServerError, R::kCurrent), none).verdict, V::kGiveUp);
  EXPECT_EQ(decideResult(failed(E::kDnsFailure, R::kCurrent), none).verdict, V::kGiveUp);
  ResultRules quick = kRules;
  quick.retry_delay = Millis(5);
  EXPECT_EQ(decideResult(failed(E::kServerError, R::kCurrent), quick).retry_at, kNow + Millis(5));
}

TEST(ResultPolicy, TheRetryRuleOverEveryFetchCode) {
  struct {
    E code;
    bool retry;
  } const codes[] = {
      {E::kNotFound, false},      {E::kAccessDenied, false}, {E::kServerError, true},   {E::kFetchTimeout, true},
      {E::kDnsFailure, true},     {E::kConnectFailure, true}, {E::kMimeMismatch, false}, {E::kTooLarge, false},
      {E::kMd5Mismatch, false},   {E::kRedirectError, false}, {E::kAddressRefused, false}, {E::kHttpOther, false},
      {E::kInternal, true},       {E::kOffline, true},       {E::kMalformed, false},
      {E::kProviderQuotaExceeded, false},
  };
  for (const auto& c : codes) EXPECT_EQ(qm::isRetryableFetchError(c.code), c.retry) << int(c.code);
}

TEST(DeletePolicy, OnlyUnknownMachineWaitsAndTheBackOffDoublesToItsCeiling) {
  const DeleteRetryRules rules{Millis(60 * 1000), Millis(300 * 1000)};
  EXPECT_EQ(decideDeleteFailure("unknown-machine", 1, rules), (DeleteFailureAction{true, Millis(0)}));
  EXPECT_EQ(decideDeleteFailure("unknown-machine", 7, rules), (DeleteFailureAction{true, Millis(0)}));
  const struct {
    std::uint32_t failures;
    std::int64_t after_s;
  } rows[] = {{1, 60}, {2, 120}, {3, 240}, {4, 300}, {5, 300}, {1000, 300}};
  for (const char* reason : {"in-use", "io-error: EIO", ""}) {
    for (const auto& r : rows) {
      EXPECT_EQ(decideDeleteFailure(reason, r.failures, rules), (DeleteFailureAction{false, Millis(r.after_s * 1000)}))
          << reason << " #" << r.failures;
    }
  }
}

}  // namespace
}  // namespace lcc::qm
