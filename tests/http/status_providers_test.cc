// Issue 30 §4: the status page names providers (largest backlog, most errors, suspended,
// full set wanted, failing sitemap; each list bounded), links each to its page with its
// recent errors and fetch rate, escapes what providers wrote, lists a failing sitemap with
// its HTTP status among the problems, and draws time ticks; every figure has a title.
#include <gtest/gtest.h>

#include <regex>

#include "common/fetch_rate.h"
#include "http/status_page.h"
#include "uns/uns_test_util.h"

namespace lcc::http {
namespace {

using nlohmann::json;
constexpr std::int64_t kNow = 1'700'000'000'000;  // 22:13:20 UTC

ProviderRecord provider(ProviderId id, const std::string& prefix) {
  ProviderRecord p;
  p.id = id;
  p.state = ProviderState::kActive;
  p.prefixes = {prefix};
  return p;
}

std::vector<ProviderRecord> records() {
  std::vector<ProviderRecord> out;
  for (ProviderId id = 1; id <= 30; ++id) out.push_back(provider(id, "http://site" + std::to_string(id) + ".example/"));
  out[1].error_total = 7;                                  // 2: most errors
  out[2].state = ProviderState::kSuspended;                // 3
  out[3].fullset_wanted = true;                            // 4
  out[4].prefixes = {"http://x.example/<script>\"q\"/"};   // 5: hostile name, big backlog
  out[5].sitemap_url = "http://site6.example/sitemap.xml";  // 6: failing sitemap
  FetchErrorEntry e;
  e.notice.key.url = "http://site2.example/<b>gone</b>";
  e.code = ErrorCode::kNotFound;
  e.http_status = 404;
  e.message = "not found";
  out[1].errors = {e};
  return out;
}

std::uint64_t queued(ProviderId id) { return id == 5 ? 9000 : id <= 20 ? id : 0; }

TEST(StatusProviders, NamesTheProvidersToLookAtBoundedPerList) {
  lcc::uns::testing::ProviderFixture fixture(records());
  std::uint64_t total = 0;
  auto rows = selectProviders(*fixture.store(), queued, {{6, "http://site6.example/sitemap.xml: HTTP 404"}}, 3, &total);
  EXPECT_EQ(total, 30u);
  std::vector<std::string> got;
  for (const auto& r : rows) {
    std::string why;
    for (const auto& w : r.why) why += (why.empty() ? "" : "+") + w;
    got.push_back(std::to_string(r.id) + ":" + why);
  }
  EXPECT_EQ(got, (std::vector<std::string>{"5:largest backlog", "20:largest backlog", "19:largest backlog",
                                           "2:most errors", "3:suspended", "4:full set wanted", "6:sitemap failing"}));
  StatusPageInput in;
  in.machine_id = "m1";
  in.providers = rows;
  in.providers_total = total;
  in.listed_per_kind = 3;
  in.status = json{{"uns", {{"sitemap", {{"failing", 1}, {"failures", {{{"id", 6}, {"error", "http://site6.example/sitemap.xml: HTTP 404"},
                                                                         {"failures", 2}, {"failing_since", "2023-11-14T22:00:00Z"},
                                                                         {"next_poll", "2023-11-14T22:15:00Z"}}}}}}}}};
  in.now_unix_ms = kNow;
  const std::string page = renderStatusPage(in);
  EXPECT_NE(page.find("<a href=\"/provider/5\">#5 http://x.example/&lt;script&gt;&quot;q&quot;/</a>"), std::string::npos)
      << "linked, escaped";
  EXPECT_EQ(page.find("<script>\""), std::string::npos);
  EXPECT_NE(page.find("7 of 30 providers"), std::string::npos);
  // The failing sitemap is a problem, with the HTTP status and not the internal code.
  const auto problems = statusProblems(in.status);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("Provider 6: its sitemap cannot be read: http://site6.example/sitemap.xml: HTTP 404"),
            std::string::npos)
      << problems[0];
  EXPECT_NE(page.find("id=\"problems\""), std::string::npos);
  EXPECT_LT(page.find("HTTP 404"), page.find("id=\"providers\""));
  // Time ticks every 10 minutes, the charts' restart said plainly.
  EXPECT_NE(page.find(">21:20<"), std::string::npos);
  EXPECT_NE(page.find(">22:10<"), std::string::npos);
  EXPECT_NE(page.find("start again at each restart"), std::string::npos);
}

TEST(StatusProviders, EveryFigureAndHeaderHasATitle) {
  StatusPageInput in;
  in.roles = {"uns", "qm", "botm", "bot"};
  in.status = json{{"qm", {{"fetches_skipped", 3}}}, {"providers", {{"active", 1}}}};
  in.providers_total = 1;
  const std::string page = renderStatusPage(in);
  std::size_t figs = 0;
  for (auto at = page.find("class=\"fig\""); at != std::string::npos; at = page.find("class=\"fig\"", at + 1)) {
    ++figs;
    EXPECT_EQ(page.compare(at + 11, 8, " title=\""), 0) << page.substr(at, 80);
  }
  EXPECT_GE(figs, 20u);
  EXPECT_NE(page.find("title=\"updates not fetched because the provider declared the same mtime, size or MD5"),
            std::string::npos)
      << "skipped explained";
  EXPECT_EQ(page.find("<th>"), page.find("<th>priority</th>")) << "only the queue table's plain headers";
}

TEST(StatusProviders, AProviderPageHasItsErrorsAndFetchRate) {
  auto recs = records();
  FetchRates rates;
  for (int i = 0; i < 30; ++i) rates.record(2, i % 10 == 0, kNow - 60'000);  // 30 results a minute ago
  const ProviderFetchRate r = rates.get(2, kNow);
  EXPECT_EQ(r.fetched, 27u);
  EXPECT_EQ(r.failed, 3u);
  EXPECT_GT(r.per_minute, 0.0);
  EXPECT_EQ(rates.get(2, kNow + 11 * 60'000).per_minute, 0.0) << "two windows later: none";
  const std::string page = renderProviderPage("m1", recs[1], 12, r, json());
  EXPECT_NE(page.find("http://site2.example/&lt;b&gt;gone&lt;/b&gt;"), std::string::npos);
  EXPECT_EQ(page.find("<b>gone"), std::string::npos);
  EXPECT_NE(page.find("<td>404</td>"), std::string::npos);
  EXPECT_NE(page.find("id=\"rate\""), std::string::npos);
  EXPECT_NE(page.find("id=\"queued\">12<"), std::string::npos);
  EXPECT_NE(page.find("href=\"/\""), std::string::npos);
  json failing{{"ok", false}, {"error", "http://site6.example/sitemap.xml: HTTP 404"}, {"failures", 3},
               {"failing_since", "2023-11-14T22:00:00Z"}, {"next_poll", "2023-11-14T22:20:00Z"}};
  const std::string six = renderProviderPage("m1", recs[5], 0, {}, failing);
  EXPECT_NE(six.find("Failing: http://site6.example/sitemap.xml: HTTP 404 — 3 failure(s)"), std::string::npos);
  for (const char* secret : {"password", "contact", "last_ip"}) EXPECT_EQ(page.find(secret), std::string::npos);
}

}  // namespace
}  // namespace lcc::http
