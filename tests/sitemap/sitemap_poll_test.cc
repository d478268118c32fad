// The LCC's polls of providers' sitemaps (core/sitemap/sitemap_poll.h), with the fetch and
// the forwarder replaced by fakes and the simulated clock: what a poll sends (op=check,
// op=delete, only what changed), what it skips (outside the prefixes), that a failed
// poll changes nothing, that the state survives a restart, and when a poll is due.
#include "sitemap/sitemap_poll.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/config/config.h"
#include "common/posix_env.h"
#include "proto/uns_qm.h"
#include "support/sim_clock.h"
#include "support/temp_dir.h"
#include "uns/uns_test_util.h"

namespace lcc::sitemap {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using nlohmann::json;

const std::string kBase = "http://site.example/";

std::string urlset(const std::vector<std::pair<std::string, std::string>>& pages) {
  std::string x = R"(<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">)";
  for (const auto& [loc, lastmod] : pages) {
    x += "<url><loc>" + loc + "</loc>" + (lastmod.empty() ? "" : "<lastmod>" + lastmod + "</lastmod>") + "</url>";
  }
  return x + "</urlset>";
}

ProviderRecord provider(ProviderId id, const std::string& sitemap, Millis interval = Millis(3600 * 1000)) {
  ProviderRecord p;
  p.id = id;
  p.state = ProviderState::kActive;
  p.prefixes = {kBase + "docs/"};
  p.sitemap_url = sitemap;
  p.sitemap_interval = interval;
  return p;
}

class SitemapPollTest : public ::testing::Test {
 protected:
  SitemapPollTest() : fixture_({provider(1, kBase + "docs/sitemap.xml")}) {}

  std::unique_ptr<SitemapPoller> poller(std::uint64_t max_set_urls = 1000) {
    SitemapPollOptions o = SitemapPollOptions::fromConfig(Config::defaults(), "");
    o.state_dir = dir_.path();
    o.max_set_urls = max_set_urls;
    o.check_interval = Millis(10 * 60 * 1000);
    o.retry_min = Millis(60 * 1000);
    SitemapPollDeps d;
    d.providers = fixture_.store();
    d.clock = &clock_;
    d.env = posixEnv();
    d.metrics = &metrics_;
    d.fetch = [this](const std::string& url, const std::vector<std::string>& prefixes, SitemapReader& reader,
                     int* http_status) {
      fetched_.push_back(url);
      EXPECT_EQ(prefixes, std::vector<std::string>{kBase + "docs/"}) << "redirects confined to the prefixes";
      auto it = files_.find(url);
      if (it == files_.end()) {
        *http_status = 404;
        return fetchFailureText(static_cast<int>(ErrorCode::kNotFound), 404, "");
      }
      if (!reader.feed(it->second)) return reader.error();
      return reader.finish() ? std::string() : reader.error();
    };
    d.submit = [this](ProviderId pid, std::uint64_t count, std::string xml) {
      auto set = proto::decodeSet("<set id=\"1\" pid=\"" + std::to_string(pid) + "\" kind=\"partial\" count=\"" +
                                  std::to_string(count) + "\">" + xml + "</set>");
      EXPECT_TRUE(set.isOk()) << set.status().toString() << "\n" << xml;
      if (set.isOk()) sets_.push_back(set.value());
      // As the UNS answers (uns/submit_wait.h): "CODE text" when refused.
      return refuse_ ? Status::busy(std::to_string(static_cast<int>(ErrorCode::kOffline)) + " spool full") : Status::ok();
    };
    return std::make_unique<SitemapPoller>(o, std::move(d));
  }

  // Every URL sent, in order, as "+url" (check), "-url" (delete).
  std::vector<std::string> sent() {
    std::vector<std::string> out;
    for (const auto& s : sets_) {
      for (const auto& n : s.urls) {
        EXPECT_NE(n.op, UrlOp::kUpdate) << "a poll never sends a plain update";
        out.push_back((n.op == UrlOp::kDelete ? "-" : "+") + n.key.url);
      }
    }
    sets_.clear();
    return out;
  }

  lcc::testing::TempDir dir_;
  lcc::testing::SimClock clock_;
  Metrics metrics_;
  lcc::uns::testing::ProviderFixture fixture_;
  std::map<std::string, std::string> files_;
  std::vector<std::string> fetched_;
  std::vector<proto::UnsQmSet> sets_;
  bool refuse_ = false;
};

TEST_F(SitemapPollTest, FirstPollSendsEveryPageAsCheckAndSkipsWhatIsOutside) {
  files_[kBase + "docs/sitemap.xml"] =
      urlset({{kBase + "docs/a.html", "2024-05-01"}, {kBase + "docs/b.pdf", ""}, {kBase + "private/c.html", ""}});
  auto p = poller();
  auto report = p->pollProvider(*fixture_.store()->get(1).value());
  ASSERT_TRUE(report.isOk()) << report.status().toString();
  ASSERT_EQ(sets_.size(), 1u);
  const auto& set = sets_[0];
  EXPECT_EQ(set.header.pid, 1u);
  EXPECT_EQ(set.header.kind, SetKind::kPartial);
  ASSERT_EQ(set.urls.size(), 2u);
  EXPECT_EQ(set.urls[0].key.url, kBase + "docs/a.html");
  EXPECT_EQ(set.urls[0].key.mime, "text/html");
  EXPECT_EQ(set.urls[0].op, UrlOp::kCheck);
  EXPECT_EQ(set.urls[0].mtime, 1714521600) << "lastmod is mt";
  EXPECT_EQ(set.urls[1].key.mime, "application/pdf");
  EXPECT_FALSE(set.urls[1].mtime);
  EXPECT_EQ(report.value().skipped, 1u);
  EXPECT_EQ(metrics_.counter("lcc_sitemap_urls_skipped_total", "").value(), 1u);
  EXPECT_EQ(metrics_.counter("lcc_sitemap_urls_sent_total", "").value(), 2u);
}

TEST_F(SitemapPollTest, ALaterPollSendsOnlyWhatChangedAlsoAfterARestart) {
  files_[kBase + "docs/sitemap.xml"] =
      urlset({{kBase + "docs/a.html", "2024-05-01"}, {kBase + "docs/b.html", "2024-05-01"}, {kBase + "docs/c.html", ""}});
  ASSERT_TRUE(poller()->pollProvider(*fixture_.store()->get(1).value()).isOk());
  sent();
  files_[kBase + "docs/sitemap.xml"] =
      urlset({{kBase + "docs/a.html", "2024-05-02"}, {kBase + "docs/c.html", ""}, {kBase + "docs/d.html", ""}});
  auto restarted = poller();  // a new poller reads the state file
  auto report = restarted->pollProvider(*fixture_.store()->get(1).value());
  ASSERT_TRUE(report.isOk());
  EXPECT_THAT(sent(), ElementsAre("+" + kBase + "docs/a.html", "+" + kBase + "docs/d.html", "-" + kBase + "docs/b.html"));
  EXPECT_EQ(report.value().changed, 2u);
  EXPECT_EQ(report.value().deleted, 1u);
  ASSERT_TRUE(restarted->pollProvider(*fixture_.store()->get(1).value()).isOk());
  EXPECT_TRUE(sets_.empty()) << "nothing changed: no set";
}

TEST_F(SitemapPollTest, AFailedPollChangesNothing) {
  files_[kBase + "docs/sitemap.xml"] = urlset({{kBase + "docs/a.html", ""}, {kBase + "docs/b.html", ""}});
  auto p = poller();
  ASSERT_TRUE(p->pollProvider(*fixture_.store()->get(1).value()).isOk());
  sent();
  // The sitemap cannot be read: no set (not "every page deleted"), the state stays.
  files_.clear();
  auto failed = p->pollProvider(*fixture_.store()->get(1).value());
  ASSERT_FALSE(failed.isOk());
  EXPECT_THAT(failed.status().message(), HasSubstr("HTTP 404"));
  EXPECT_TRUE(sets_.empty());
  // A refused set: the state stays, so the next poll sends the change again.
  files_[kBase + "docs/sitemap.xml"] = urlset({{kBase + "docs/a.html", ""}});
  refuse_ = true;
  auto refused = p->pollProvider(*fixture_.store()->get(1).value());
  ASSERT_FALSE(refused.isOk());
  EXPECT_THAT(refused.status().message(), HasSubstr("a set was refused: 130 spool full"));
  EXPECT_THAT(sent(), ElementsAre("-" + kBase + "docs/b.html"));
  refuse_ = false;
  ASSERT_TRUE(p->pollProvider(*fixture_.store()->get(1).value()).isOk());
  EXPECT_THAT(sent(), ElementsAre("-" + kBase + "docs/b.html"));
  EXPECT_EQ(metrics_.counter("lcc_sitemap_poll_failures_total", "").value(), 2u);
}

// Issue 25: a listed page is checked as a CP's <url> would be, its type guessed from
// the path: one the node does not accept (accept_mime: text, PDF, XML here) is never
// sent, so never fetched, and becomes an error of the provider with its code, once.
TEST_F(SitemapPollTest, PagesOfTypesNotAcceptedAreNotSentAndBecomeTheProvidersErrors) {
  files_[kBase + "docs/sitemap.xml"] =
      urlset({{kBase + "docs/page.html", ""}, {kBase + "docs/img.png", ""}, {kBase + "docs/tool.exe", ""},
              {kBase + "docs/about", ""}, {kBase + "docs/paper.pdf", ""}});
  auto p = poller();
  auto report = p->pollProvider(*fixture_.store()->get(1).value());
  ASSERT_TRUE(report.isOk()) << report.status().toString();
  EXPECT_THAT(sent(), ElementsAre("+" + kBase + "docs/about", "+" + kBase + "docs/page.html",
                                  "+" + kBase + "docs/paper.pdf"));
  EXPECT_EQ(report.value().refused, 2u);
  EXPECT_EQ(report.value().changed, 3u);
  EXPECT_EQ(metrics_.counter("lcc_sitemap_urls_refused_total", "").value(), 2u);
  auto errors = [&] {
    std::vector<std::string> out;
    const ProviderRecord record = *fixture_.store()->get(1).value();
    for (const auto& e : record.errors) {
      out.push_back(std::to_string(static_cast<int>(e.code)) + " " + e.notice.key.url + " " + e.notice.key.mime);
    }
    return out;
  };
  EXPECT_THAT(errors(), ElementsAre("203 " + kBase + "docs/img.png image/png",
                                    "203 " + kBase + "docs/tool.exe application/octet-stream"));
  EXPECT_EQ(fixture_.store()->get(1).value()->error_total, 2u);
  EXPECT_THAT(fixture_.store()->get(1).value()->errors[0].message, HasSubstr("mime type not accepted"));
  // Unchanged at the next poll: nothing sent, nothing reported again.
  ASSERT_TRUE(p->pollProvider(*fixture_.store()->get(1).value()).isOk());
  EXPECT_TRUE(sent().empty());
  EXPECT_EQ(errors().size(), 2u);
  // A page no longer listed is deleted whatever its type (what an older LCC stored goes).
  files_[kBase + "docs/sitemap.xml"] = urlset({{kBase + "docs/page.html", ""}, {kBase + "docs/about", ""},
                                               {kBase + "docs/paper.pdf", ""}});
  ASSERT_TRUE(p->pollProvider(*fixture_.store()->get(1).value()).isOk());
  EXPECT_THAT(sent(), ElementsAre("-" + kBase + "docs/img.png", "-" + kBase + "docs/tool.exe"));
}

TEST_F(SitemapPollTest, ASitemapOutsideThePrefixesIsNotRead) {
  auto p = poller();
  auto r = p->pollProvider(provider(1, kBase + "sitemap.xml"));
  ASSERT_FALSE(r.isOk());
  EXPECT_THAT(r.status().message(), HasSubstr("not under the provider's prefixes"));
  EXPECT_TRUE(fetched_.empty());
}

TEST_F(SitemapPollTest, ChangesGoInSetsOfAtMostMaxSetUrls) {
  std::vector<std::pair<std::string, std::string>> pages;
  for (int i = 0; i < 5; ++i) pages.emplace_back(kBase + "docs/p" + std::to_string(i) + ".html", "");
  files_[kBase + "docs/sitemap.xml"] = urlset(pages);
  auto report = poller(2)->pollProvider(*fixture_.store()->get(1).value());
  ASSERT_TRUE(report.isOk());
  EXPECT_EQ(report.value().sets, 3u);
  ASSERT_EQ(sets_.size(), 3u);
  EXPECT_EQ(sets_[2].urls.size(), 1u);
}

TEST_F(SitemapPollTest, PollsWhenDueByTheClockAlsoAcrossARestart) {
  files_[kBase + "docs/sitemap.xml"] = urlset({{kBase + "docs/a.html", ""}});
  auto p = poller();
  p->pollDue();
  EXPECT_EQ(fetched_.size(), 1u) << "never polled: due";
  p->pollDue();
  clock_.advance(Millis(3599 * 1000));
  p->pollDue();
  EXPECT_EQ(fetched_.size(), 1u) << "not before its interval";
  clock_.advance(Millis(1000));
  p->pollDue();
  EXPECT_EQ(fetched_.size(), 2u);
  // A restart: the state file says when it was polled.
  auto restarted = poller();
  restarted->pollDue();
  EXPECT_EQ(fetched_.size(), 2u);
  // A new sitemap URL is polled at once.
  ASSERT_TRUE(fixture_.store()->modify(1, [](ProviderRecord& r) {
                r.sitemap_url = kBase + "docs/sitemap2.xml";
                return Status::ok();
              }).isOk());
  files_[kBase + "docs/sitemap2.xml"] = files_[kBase + "docs/sitemap.xml"];
  restarted->pollDue();
  EXPECT_EQ(fetched_.back(), kBase + "docs/sitemap2.xml");
  // A suspended provider is not polled.
  ASSERT_TRUE(fixture_.store()->modify(1, [](ProviderRecord& r) {
                r.state = ProviderState::kSuspended;
                return Status::ok();
              }).isOk());
  clock_.advance(Millis(7200 * 1000));
  const auto before = fetched_.size();
  restarted->pollDue();
  EXPECT_EQ(fetched_.size(), before);
}

// Issue 30 §4: a failed poll says what the site answered ("HTTP 404", not the
// internal code), is tried again after 1 min, 2, 4, ... up to the interval (not an
// interval later), keeps its failure across a restart, and clears it once a poll works.
TEST_F(SitemapPollTest, AFailedPollIsRetriedWithBackOffAndSaysTheHttpStatus) {
  auto p = poller();
  p->pollDue();  // no sitemap file: 404
  ASSERT_EQ(fetched_.size(), 1u);
  auto st = p->providerStatus(1);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->failures, 1u);
  EXPECT_EQ(st->http_status, 404);
  EXPECT_EQ(st->error, kBase + "docs/sitemap.xml: HTTP 404");
  EXPECT_EQ(st->next_poll, st->last_attempt + Millis(60 * 1000));
  EXPECT_EQ(p->nextWake(), Millis(60 * 1000)) << "woken for the retry, not at check_interval (10 min)";
  std::vector<std::int64_t> waits;  // seconds between the attempts
  WallTime last = st->last_attempt;
  for (int i = 0; i < 9; ++i) {
    const std::size_t before = fetched_.size();
    const Millis wait = std::chrono::duration_cast<Millis>(p->providerStatus(1)->next_poll - clock_.now());
    clock_.advance(wait - Millis(1000));
    p->pollDue();
    EXPECT_EQ(fetched_.size(), before) << "not before its retry";
    clock_.advance(Millis(1000));
    p->pollDue();
    ASSERT_EQ(fetched_.size(), before + 1) << "retried when due";
    waits.push_back(std::chrono::duration_cast<Millis>(clock_.now() - last).count() / 1000);
    last = clock_.now();
  }
  EXPECT_THAT(waits, ElementsAre(60, 120, 240, 480, 960, 1920, 3600, 3600, 3600)) << "doubling up to the interval";
  json out;
  p->status(out);
  EXPECT_EQ(out["failing"], 1);
  ASSERT_EQ(out["failures"].size(), 1u);
  EXPECT_EQ(out["failures"][0]["id"], 1);
  EXPECT_EQ(out["failures"][0]["http_status"], 404);
  EXPECT_EQ(out["failures"][0]["failures"], 10);
  EXPECT_EQ(out["failures"][0]["ok"], false);
  // A restart keeps the failure, and its back-off.
  auto restarted = poller();
  const std::size_t before = fetched_.size();
  restarted->pollDue();
  EXPECT_EQ(fetched_.size(), before) << "the back-off goes on after a restart";
  ASSERT_TRUE(restarted->providerStatus(1));
  EXPECT_EQ(restarted->providerStatus(1)->failures, 10u);
  EXPECT_EQ(restarted->providerStatus(1)->http_status, 404);
  // Fixed: the next poll works, the failure goes (from the disk too).
  files_[kBase + "docs/sitemap.xml"] = urlset({{kBase + "docs/a.html", ""}});
  clock_.advance(Millis(3600 * 1000));
  restarted->pollDue();
  ASSERT_EQ(fetched_.size(), before + 1);
  EXPECT_EQ(restarted->providerStatus(1)->failures, 0u);
  EXPECT_EQ(restarted->providerStatus(1)->last_report->pages, 1u);
  EXPECT_FALSE(posixEnv()->exists(dir_.path() + "/1.failed"));
  EXPECT_EQ(restarted->nextWake(), Millis(10 * 60 * 1000));
  restarted->status(out);
  EXPECT_EQ(out["failing"], 0);
}

TEST_F(SitemapPollTest, SettingTheSameSitemapAgainPollsNow) {
  files_[kBase + "docs/sitemap.xml"] = urlset({{kBase + "docs/a.html", ""}});
  auto p = poller();
  p->pollDue();
  ASSERT_EQ(fetched_.size(), 1u);
  clock_.advance(Millis(60 * 1000));
  p->pollDue();
  EXPECT_EQ(fetched_.size(), 1u) << "not due for an hour";
  p->pollSoon(1);  // what `lcc provider set 1 --sitemap <the same URL>` does
  p->pollDue();
  EXPECT_EQ(fetched_.size(), 2u) << "polled at once";
  p->pollDue();
  EXPECT_EQ(fetched_.size(), 2u) << "once";
}

TEST_F(SitemapPollTest, AProviderNoLongerPolledIsNoLongerFailing) {
  auto p = poller();
  p->pollDue();
  ASSERT_EQ(p->providerStatus(1)->failures, 1u);
  ASSERT_TRUE(posixEnv()->exists(dir_.path() + "/1.failed"));
  ASSERT_TRUE(fixture_.store()->modify(1, [](ProviderRecord& r) {
                r.sitemap_url.clear();
                return Status::ok();
              }).isOk());
  p->pollDue();
  EXPECT_FALSE(p->providerStatus(1));
  EXPECT_FALSE(posixEnv()->exists(dir_.path() + "/1.failed"));
  json out;
  p->status(out);
  EXPECT_EQ(out["failing"], 0);
}

TEST(SitemapFetchFailureText, NamesTheHttpStatusOrTheReason) {
  EXPECT_EQ(fetchFailureText(301, 404, ""), "HTTP 404");
  EXPECT_EQ(fetchFailureText(303, 503, "HTTP 503"), "HTTP 503");
  EXPECT_EQ(fetchFailureText(306, 0, "connection refused"), "connection failed after retries (306): connection refused");
}

}  // namespace
}  // namespace lcc::sitemap
