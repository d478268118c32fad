// Metrics as Prometheus and /status see them: one HELP and TYPE per family, counters
// and gauges kept apart, labelled series with escaped values, snapshot keys; and the
// SampleRing behind the status page's charts.
#include <gtest/gtest.h>

#include "common/metrics.h"
#include "common/sample_ring.h"

namespace lcc {
namespace {

TEST(Metrics, OneHelpAndTypePerFamilyWithLabelledSeries) {
  Metrics m;
  m.counter("lcc_qm_fetch_errors_total", "failed fetches, by error code", {{"code", "301"}}).inc(2);
  m.counter("lcc_qm_fetch_errors_total", "ignored: the first help stays", {{"code", "306"}}).inc();
  m.counter("lcc_qm_fetch_errors_total", "", {{"code", "301"}}).inc();
  m.gauge("lcc_qm_queued_urls", "URLs in the QDB").set(7);
  m.counter("lcc_qm_fetches_total", "fetches").setTotal(40);
  const std::string text = m.prometheusText();
  EXPECT_EQ(text,
            "# HELP lcc_qm_fetch_errors_total failed fetches, by error code\n"
            "# TYPE lcc_qm_fetch_errors_total counter\n"
            "lcc_qm_fetch_errors_total{code=\"301\"} 3\n"
            "lcc_qm_fetch_errors_total{code=\"306\"} 1\n"
            "# HELP lcc_qm_fetches_total fetches\n"
            "# TYPE lcc_qm_fetches_total counter\n"
            "lcc_qm_fetches_total 40\n"
            "# HELP lcc_qm_queued_urls URLs in the QDB\n"
            "# TYPE lcc_qm_queued_urls gauge\n"
            "lcc_qm_queued_urls 7\n");
  auto snap = m.snapshot();
  EXPECT_EQ(snap["lcc_qm_fetch_errors_total{code=\"301\"}"], 3);
  EXPECT_EQ(snap["lcc_qm_queued_urls"], 7);
  EXPECT_EQ(snap.count("lcc_qm_fetch_errors_total"), 0u) << "no unlabelled series of a labelled family";
}

TEST(Metrics, LabelValuesAreEscaped) {
  Metrics m;
  m.counter("x_total", "h", {{"a", "q\"b\\c\nd"}, {"b", "2"}}).inc();
  EXPECT_NE(m.prometheusText().find("x_total{a=\"q\\\"b\\\\c\\nd\",b=\"2\"} 1\n"), std::string::npos)
      << m.prometheusText();
}

TEST(SampleRing, KeepsTheNewestAndDropsTheOldest) {
  SampleRing ring(3);
  for (int i = 1; i <= 5; ++i) ring.push(Sample{i * 1000, {{"queued", i}}});
  auto s = ring.samples();
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s.front().unix_ms, 3000);
  EXPECT_EQ(s.back().values.at("queued"), 5);
}

TEST(SampleRing, SeriesFromAQmNodeAndFromARobotNode) {
  const auto qm = sampleFromMetrics(5, {{"lcc_qm_queued_urls", 9},
                                        {"lcc_qm_in_flight", 2},
                                        {"lcc_qm_fetched_total", 10},
                                        {"lcc_qm_unchanged_total", 3},
                                        {"lcc_qm_fetch_errors_total{code=\"301\"}", 2},
                                        {"lcc_qm_fetch_errors_total{code=\"306\"}", 1},
                                        {"lcc_qm_fetch_errors_totalx", 100},
                                        {"lcc_uns_spool_bytes", 4096}});
  EXPECT_EQ(qm.unix_ms, 5);
  EXPECT_EQ(qm.values, (std::map<std::string, std::int64_t>{
                           {"queued", 9}, {"in_flight", 2}, {"fetches", 16}, {"errors", 3}, {"spool_bytes", 4096}}));
  const auto robots = sampleFromMetrics(
      6, {{"lcc_botm_queued", 4}, {"lcc_botm_results_ok_total", 20}, {"lcc_botm_results_failed_total", 5}});
  EXPECT_EQ(robots.values,
            (std::map<std::string, std::int64_t>{{"in_flight", 4}, {"fetches", 25}, {"errors", 5}}));
  EXPECT_TRUE(sampleFromMetrics(7, {}).values.empty());
}

}  // namespace
}  // namespace lcc
