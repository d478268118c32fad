// GET / as a person sees it, rendered from a fixed /admin/status document and samples:
// problems first, every figure tagged with its JSON path, queue by priority, errors by
// code with their meaning, charts drawn from the samples, the old links, escaping.
#include <gtest/gtest.h>

#include <regex>

#include "http/status_page.h"

namespace lcc::http {
namespace {

using nlohmann::json;
constexpr std::int64_t kNow = 1'700'000'000'000;

json statusDoc() {
  return json{{"machine_id", "m<1>"},
              {"roles", {"uns", "qm", "botm", "bot", "cu", "rs"}},
              {"qm",
               {{"queued_urls", 1234}, {"in_flight", 7}, {"in_flight_limit", 24}, {"ready_sets", 2},
                {"overloaded", true}, {"cache_crash", false}, {"failed", false}, {"fetched", 50},
                {"unchanged", 4}, {"fetch_errors", 3}, {"providers_queued", 2}, {"providers_delayed", 1}}},
              {"bot", {{"robots", 1}, {"connected", 1}, {"slots_per_robot", 32}, {"in_flight", 7}}},
              {"botm", {{"source", "127.0.0.1:7702"}, {"source_connected", true}, {"capacity", 32}, {"queued", 0}}},
              {"uns", {{"connections", 0}, {"forwarder", {{"qm_connected", true}, {"spool_sets", 0},
                                                          {"spool_bytes", 3 * 1024 * 1024}, {"spool_full", false}}}}},
              {"providers", {{"total", 3}, {"active", 2}, {"pending", 0}, {"suspended", 1}}},
              {"counters", {{"lcc_qm_fetch_errors_total{code=\"301\"}", 2},
                            {"lcc_qm_fetch_errors_total{code=\"306\"}", 1}}}};
}

StatusPageInput input() {
  StatusPageInput in;
  in.machine_id = "m<1>";
  in.roles = {"uns", "qm", "botm", "bot", "cu", "rs"};
  in.status = statusDoc();
  in.queued_by_priority = {{0, 1000}, {5, 234}};
  for (int i = 0; i < 4; ++i) {
    in.samples.push_back(Sample{kNow - (3 - i) * 10'000, {{"queued", 1000 + 100 * i}, {"fetches", 60 * i},
                                                          {"errors", i}, {"spool_bytes", 0}}});
  }
  in.now_unix_ms = kNow;
  return in;
}

std::string valueOf(const std::string& page, const std::string& key) {
  std::smatch m;
  const std::regex re("data-key=\"" + key + "\" data-value=\"([^\"]*)\"");
  return std::regex_search(page, m, re) ? m[1].str() : "<absent>";
}

TEST(StatusPage, FiguresCarryTheirJsonPathAndValue) {
  const std::string page = renderStatusPage(input());
  EXPECT_EQ(valueOf(page, "qm/queued_urls"), "1234");
  EXPECT_EQ(valueOf(page, "qm/in_flight"), "7");
  EXPECT_EQ(valueOf(page, "providers/active"), "2");
  EXPECT_EQ(valueOf(page, "providers/suspended"), "1");
  EXPECT_EQ(valueOf(page, "qm/providers_delayed"), "1");
  EXPECT_EQ(valueOf(page, "bot/slots_per_robot"), "32");
  EXPECT_EQ(valueOf(page, "uns/forwarder/spool_bytes"), std::to_string(3 * 1024 * 1024));
  EXPECT_NE(page.find(">3.0 MiB<"), std::string::npos) << "bytes shown for a person";
  EXPECT_EQ(valueOf(page, "qm/overloaded"), "yes");
}

TEST(StatusPage, ProblemsComeFirst) {
  const std::string page = renderStatusPage(input());
  const auto problems = page.find("id=\"problems\"");
  ASSERT_NE(problems, std::string::npos);
  EXPECT_NE(page.find("Overloaded", problems), std::string::npos);
  EXPECT_LT(problems, page.find("data-key=")) << "before any figure";
  StatusPageInput calm = input();
  calm.status["qm"]["overloaded"] = false;
  EXPECT_NE(renderStatusPage(calm).find("No problems."), std::string::npos);
  calm.status["uns"]["forwarder"]["qm_connected"] = false;
  calm.status["qm"]["cache_crash"] = true;
  const auto list = statusProblems(calm.status);
  ASSERT_EQ(list.size(), 2u);
  EXPECT_NE(list[0].find("cache-crash"), std::string::npos) << "worst first";
  EXPECT_NE(list[1].find("no connection to the QM"), std::string::npos);
}

TEST(StatusPage, QueueByPriorityHighestFirstAndErrorsByCode) {
  const std::string page = renderStatusPage(input());
  const auto p5 = page.find("data-priority=\"5\">234<");
  const auto p0 = page.find("data-priority=\"0\">1000<");
  ASSERT_NE(p5, std::string::npos);
  ASSERT_NE(p0, std::string::npos);
  EXPECT_LT(p5, p0);
  EXPECT_NE(page.find("data-code=\"301\">2<"), std::string::npos);
  EXPECT_NE(page.find("data-code=\"306\">1<"), std::string::npos);
  EXPECT_NE(page.find("not found"), std::string::npos) << "301 explained";
  EXPECT_EQ(fetchErrorsByCode(statusDoc()), (std::map<int, std::uint64_t>{{301, 2}, {306, 1}}));
}

TEST(StatusPage, ChartsAreDrawnFromTheSamples) {
  const std::string page = renderStatusPage(input());
  std::size_t svgs = 0, lines = 0;
  for (auto at = page.find("<svg"); at != std::string::npos; at = page.find("<svg", at + 1)) ++svgs;
  for (auto at = page.find("<polyline"); at != std::string::npos; at = page.find("<polyline", at + 1)) ++lines;
  EXPECT_EQ(svgs, 4u) << "queue, fetch rate, error rate, spool";
  EXPECT_EQ(lines, 4u);
  // 60 fetches every 10 s: 360 a minute.
  const auto rate = ratePerMinute(input().samples, "fetches");
  ASSERT_EQ(rate.size(), 3u);
  EXPECT_DOUBLE_EQ(rate[0].second, 360.0);
  EXPECT_EQ(rate[2].first, kNow);
  // The newest point sits at the right edge, the top of the axis above the largest value.
  const std::string svg = renderChartSvg("Q", "URLs", {{kNow - 1800'000, 0}, {kNow, 100}}, kNow);
  EXPECT_NE(svg.find("points=\"197.0,130.0 350.0,35.5\""), std::string::npos) << svg;
  EXPECT_NE(svg.find(">110<"), std::string::npos) << svg;
  const std::string empty = renderChartSvg("Q", "URLs", {{kNow, 1}}, kNow);
  EXPECT_EQ(empty.find("<polyline"), std::string::npos);
  EXPECT_NE(empty.find("collecting samples"), std::string::npos);
}

TEST(StatusPage, KeepsTheLinksAndEscapes) {
  const std::string page = renderStatusPage(input());
  for (const char* want : {"href=\"/register\"", "href=\"/status\"", "href=\"/metrics\"", "href=\"/cu/query?limit=10\"",
                           "m&lt;1&gt;"}) {
    EXPECT_NE(page.find(want), std::string::npos) << want;
  }
  EXPECT_EQ(page.find("m<1>"), std::string::npos);
  StatusPageInput bare;
  bare.machine_id = "x";
  const std::string none = renderStatusPage(bare);
  EXPECT_EQ(none.find("/register"), std::string::npos);
  EXPECT_NE(none.find("href=\"/status\""), std::string::npos);
}

}  // namespace
}  // namespace lcc::http
