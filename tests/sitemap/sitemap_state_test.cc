// What `lcc cp sitemap --state` and the sitemap poller share (core/sitemap/sitemap_state.h,
// sitemap_walk.h): the state text, the diff between two reads, and the walk over a
// sitemap tree with its skip and fail rules.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "sitemap/sitemap_state.h"
#include "sitemap/sitemap_walk.h"

namespace lcc::sitemap {
namespace {

using ::testing::HasSubstr;

std::vector<std::string> describe(const std::vector<SitemapChange>& changes) {
  std::vector<std::string> out;
  for (const auto& c : changes) {
    out.push_back((c.deleted ? "-" : "+") + c.url + (c.lastmod ? "@" + std::to_string(*c.lastmod) : ""));
  }
  return out;
}

TEST(SitemapState, RoundTripsAndSkipsComments) {
  SitemapPages pages{{"http://a.example/x", 1714564800}, {"http://a.example/y", std::nullopt}};
  const std::string text = formatSitemapState(pages, "a header");
  EXPECT_EQ(text, "# a header\nhttp://a.example/x\t1714564800\nhttp://a.example/y\t-\n");
  SitemapPages back;
  std::string err;
  ASSERT_TRUE(parseSitemapState(text + "# a comment\n\n", back, &err)) << err;
  EXPECT_EQ(back, pages);
}

TEST(SitemapState, RefusesALineThatIsNotAStateLine) {
  for (const char* bad : {"http://a.example/x\n", "http://a.example/x\tyesterday\n", "\t5\n"}) {
    SitemapPages pages;
    std::string err;
    EXPECT_FALSE(parseSitemapState(std::string("# h\n") + bad, pages, &err)) << bad;
    EXPECT_EQ(err, "line 2: not a sitemap state line") << bad;
  }
}

TEST(SitemapDiff, FirstReadSendsEverythingAndDeletesNothing) {
  SitemapPages now{{"http://a/1", 10}, {"http://a/2", std::nullopt}};
  EXPECT_THAT(describe(diffSitemaps({}, false, now)), ::testing::ElementsAre("+http://a/1@10", "+http://a/2"));
}

TEST(SitemapDiff, OnlyWhatChangedDeletionsLast) {
  SitemapPages before{{"http://a/same", 10}, {"http://a/newer", 10}, {"http://a/nolastmod", std::nullopt},
                      {"http://a/gone", 5}, {"http://a/lost-lastmod", 7}};
  SitemapPages now{{"http://a/same", 10}, {"http://a/newer", 20}, {"http://a/nolastmod", std::nullopt},
                   {"http://a/new", std::nullopt}, {"http://a/lost-lastmod", std::nullopt}};
  EXPECT_THAT(describe(diffSitemaps(before, true, now)),
              ::testing::ElementsAre("+http://a/new", "+http://a/newer@20", "-http://a/gone@5"));
  EXPECT_TRUE(diffSitemaps(now, true, now).empty()) << "nothing changed, nothing sent";
}

TEST(SitemapDiff, SinceLeavesOutOlderPagesOnly) {
  SitemapPages now{{"http://a/old", 10}, {"http://a/recent", 30}, {"http://a/unknown", std::nullopt}};
  EXPECT_THAT(describe(diffSitemaps({}, false, now, 20)),
              ::testing::ElementsAre("+http://a/recent@30", "+http://a/unknown"));
}

// A site of sitemaps in memory: URL → body; every fetch is recorded.
struct FakeSite {
  std::map<std::string, std::string> files;
  std::vector<std::string> fetched;
  SitemapWalk::Fetch fetch() {
    return [this](const std::string& source, bool, SitemapReader& reader) -> std::string {
      fetched.push_back(source);
      auto it = files.find(source);
      if (it == files.end()) return "HTTP 404";
      if (!reader.feed(it->second)) return reader.error();
      return reader.finish() ? "" : reader.error();
    };
  }
};

std::string urlset(const std::vector<std::string>& locs) {
  std::string x = R"(<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">)";
  for (const auto& l : locs) x += "<url><loc>" + l + "</loc><lastmod>2024-05-01</lastmod></url>";
  return x + "</urlset>";
}

std::string index(const std::vector<std::string>& locs) {
  std::string x = R"(<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">)";
  for (const auto& l : locs) x += "<sitemap><loc>" + l + "</loc></sitemap>";
  return x + "</sitemapindex>";
}

TEST(SitemapWalk, FollowsIndexesAndKeepsToWhatAdmitAllows) {
  FakeSite site;
  site.files["http://a.example/index.xml"] =
      index({"http://a.example/s1.xml", "http://b.example/s2.xml", "http://a.example/index.xml"});
  site.files["http://a.example/s1.xml"] = urlset({"http://a.example/p1", "http://A.EXAMPLE:80/p2",
                                                  "http://b.example/p3", "ftp://a.example/p4"});
  site.files["http://b.example/s2.xml"] = urlset({"http://b.example/p5"});
  SitemapWalk walk(site.fetch());
  walk.setAdmit([](const std::string& u) { return u.rfind("http://a.example/", 0) == 0; });
  ASSERT_TRUE(walk.read("http://a.example/index.xml")) << walk.error();
  EXPECT_EQ(site.fetched, (std::vector<std::string>{"http://a.example/index.xml", "http://a.example/s1.xml"}))
      << "the other site's sitemap is not fetched, the loop is read once";
  EXPECT_EQ(walk.pages().size(), 2u);
  EXPECT_TRUE(walk.pages().count("http://a.example/p2")) << "pages in normal form";
  EXPECT_EQ(walk.refused(), 2u);  // s2.xml and p3
  EXPECT_EQ(walk.invalid(), 1u);  // ftp
  EXPECT_EQ(walk.files(), 2u);
  ASSERT_FALSE(walk.skippedSamples().empty());
  EXPECT_THAT(walk.skippedSamples().front(), HasSubstr("http://b.example/s2.xml: outside"));
}

TEST(SitemapWalk, AnUnreadableSitemapFailsTheWhole) {
  FakeSite site;
  site.files["http://a.example/index.xml"] = index({"http://a.example/s1.xml", "http://a.example/missing.xml"});
  site.files["http://a.example/s1.xml"] = urlset({"http://a.example/p1"});
  SitemapWalk walk(site.fetch());
  EXPECT_FALSE(walk.read("http://a.example/index.xml"));
  EXPECT_EQ(walk.error(), "http://a.example/missing.xml: HTTP 404");
}

TEST(SitemapWalk, LimitsOfDepthAndPages) {
  FakeSite site;
  for (int i = 0; i < 4; ++i) {
    site.files["http://a/i" + std::to_string(i)] = index({"http://a/i" + std::to_string(i + 1)});
  }
  site.files["http://a/i4"] = urlset({"http://a/p"});
  SitemapWalk deep(site.fetch(), [] { SitemapWalkOptions o; o.max_depth = 3; return o; }());
  EXPECT_FALSE(deep.read("http://a/i0"));
  EXPECT_THAT(deep.error(), HasSubstr("nested deeper than 3"));
  site.files["http://a/big"] = urlset({"http://a/1", "http://a/2", "http://a/3"});
  SitemapWalk big(site.fetch(), [] { SitemapWalkOptions o; o.max_pages = 2; return o; }());
  EXPECT_FALSE(big.read("http://a/big"));
  EXPECT_EQ(big.error(), "http://a/big: more than 2 pages in all");
}

}  // namespace
}  // namespace lcc::sitemap
