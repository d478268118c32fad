// The sitemaps.org reader (core/sitemap/sitemap.h): what comes out of a urlset and an
// index, plain and gzip, in pieces of any size; every limit and rule refused with the
// message a site owner can act on; W3C Datetime for lastmod.
#include "sitemap/sitemap.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include "lcc/support/time_util.h"

namespace lcc::sitemap {
namespace {

using ::testing::HasSubstr;

const std::string kHead = R"(<?xml version="1.0" encoding="UTF-8"?>)"
                          R"(<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">)";

struct Read {
  bool ok = false;
  std::string error;
  SitemapKind kind = SitemapKind::kUnknown;
  std::vector<SitemapEntry> entries;
  std::uint64_t bad_lastmods = 0;
};

// Feeds `bytes` in pieces of `piece` bytes (0: all at once).
Read readAll(const std::string& bytes, std::size_t piece = 0, SitemapLimits limits = {}) {
  Read r;
  SitemapReader reader([&](const SitemapEntry& e) { r.entries.push_back(e); }, limits);
  bool fed = true;
  for (std::size_t at = 0; fed && at < bytes.size();) {
    const std::size_t n = piece == 0 ? bytes.size() : std::min(piece, bytes.size() - at);
    fed = reader.feed(std::string_view(bytes).substr(at, n));
    at += n;
  }
  r.ok = fed && reader.finish();
  r.error = reader.error();
  r.kind = reader.kind();
  r.bad_lastmods = reader.badLastmods();
  return r;
}

std::string gzip(const std::string& plain) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&zs, plain.size()) + 32, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(plain.data()));
  zs.avail_in = static_cast<uInt>(plain.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

std::string urlset(int n) {
  std::string s = kHead;
  for (int i = 0; i < n; ++i) s += "<url><loc>http://a.example/p" + std::to_string(i) + ".html</loc></url>";
  return s + "</urlset>";
}

TEST(SitemapTest, UrlsetGivesEachLocWithItsLastmodWhateverThePieces) {
  const std::string doc = kHead +
                          "<url>\n  <loc>\n    http://a.example/one.html\n  </loc>\n"
                          "  <lastmod>2024-05-01</lastmod><changefreq>daily</changefreq><priority>0.8</priority>\n"
                          "</url>"
                          "<url><loc>http://a.example/two?x=1&amp;y=2</loc>"
                          "<lastmod>2024-05-01T12:30:15+02:00</lastmod></url>"
                          "<url><loc>http://a.example/three</loc></url></urlset>\n";
  for (std::size_t piece : {0, 1, 7}) {
    Read r = readAll(doc, piece);
    ASSERT_TRUE(r.ok) << piece << ": " << r.error;
    EXPECT_EQ(r.kind, SitemapKind::kUrlSet);
    ASSERT_EQ(r.entries.size(), 3u);
    EXPECT_EQ(r.entries[0].loc, "http://a.example/one.html");
    EXPECT_EQ(r.entries[0].lastmod, parseTime("2024-05-01T00:00:00Z"));
    EXPECT_EQ(r.entries[1].loc, "http://a.example/two?x=1&y=2");
    EXPECT_EQ(r.entries[1].lastmod, parseTime("2024-05-01T10:30:15Z"));
    EXPECT_FALSE(r.entries[2].lastmod.has_value());
  }
}

TEST(SitemapTest, AnIndexListsSitemapsAndExtensionsAreIgnored) {
  const std::string doc =
      R"(<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:x="urn:ext">)"
      "<sitemap><loc>http://a.example/s1.xml.gz</loc><lastmod>2024-01</lastmod><x:note>hi</x:note></sitemap>"
      "<sitemap><loc>http://a.example/s2.xml</loc></sitemap></sitemapindex>";
  Read r = readAll(doc);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.kind, SitemapKind::kIndex);
  ASSERT_EQ(r.entries.size(), 2u);
  EXPECT_EQ(r.entries[0].loc, "http://a.example/s1.xml.gz");
  EXPECT_EQ(r.entries[0].lastmod, parseTime("2024-01-01T00:00:00Z"));
}

TEST(SitemapTest, GzipIsReadInAnyPiecesAndAsSeveralMembers) {
  const std::string doc = urlset(300);
  for (std::size_t piece : {0, 1, 100}) {
    Read r = readAll(gzip(doc), piece);
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.entries.size(), 300u);
  }
  // A gzip file may hold several members; together they are one document.
  const std::size_t half = doc.size() / 2;
  Read two = readAll(gzip(doc.substr(0, half)) + gzip(doc.substr(half)), 5);
  ASSERT_TRUE(two.ok) << two.error;
  EXPECT_EQ(two.entries.size(), 300u);
}

TEST(SitemapTest, BrokenOrCutOffGzipIsRefused) {
  const std::string z = gzip(urlset(50));
  Read cut = readAll(z.substr(0, z.size() - 12));
  EXPECT_FALSE(cut.ok);
  EXPECT_THAT(cut.error, HasSubstr("cut off"));
  std::string bad = z;
  bad[20] = static_cast<char>(bad[20] ^ 0x55);
  bad[21] = static_cast<char>(bad[21] ^ 0x55);
  Read broken = readAll(bad);
  EXPECT_FALSE(broken.ok);
  EXPECT_FALSE(broken.error.empty());
  Read trailing = readAll(z + "garbage!");
  EXPECT_FALSE(trailing.ok);
  EXPECT_THAT(trailing.error, HasSubstr("gzip"));
}

TEST(SitemapTest, MoreEntriesThanTheLimitAreRefusedAtTheFirstOneOver) {
  SitemapLimits limits;
  limits.max_entries = 10;
  Read r = readAll(urlset(11), 0, limits);
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.error, HasSubstr("more than 10 entries"));
  EXPECT_EQ(r.entries.size(), 10u);
  EXPECT_TRUE(readAll(urlset(10), 0, limits).ok);
}

TEST(SitemapTest, MoreBytesThanTheLimitAreRefusedAlsoWhenCompressed) {
  SitemapLimits limits;
  limits.max_bytes = 4096;
  const std::string big = urlset(200);  // far past 4 KiB, but compresses well
  ASSERT_LT(gzip(big).size(), 4096u);
  for (const std::string& bytes : {big, gzip(big)}) {
    Read r = readAll(bytes, 0, limits);
    EXPECT_FALSE(r.ok);
    EXPECT_THAT(r.error, HasSubstr("uncompressed"));
  }
}

TEST(SitemapTest, EachBrokenRuleIsRefusedWithItsReason) {
  const std::string ns = R"( xmlns="http://www.sitemaps.org/schemas/sitemap/0.9")";
  const std::string long_loc(3000, 'a');
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "empty"},
      {"<urlset><url><loc>http://a/</loc></url></urlset>", "not a <urlset> or <sitemapindex>"},
      {"<rss" + ns + "/>", "the root element is <rss>"},
      {"<urlset" + ns + "><url><lastmod>2024</lastmod></url></urlset>", "without a <loc>"},
      {"<urlset" + ns + "><url><loc>http://a/x</loc><loc>http://a/y</loc></url></urlset>", "two <loc>"},
      {"<urlset" + ns + "><sitemap><loc>http://a/s.xml</loc></sitemap></urlset>", "a <sitemap> inside a <urlset>"},
      {"<urlset" + ns + "><url><loc>http://a/" + long_loc + "</loc></url></urlset>", "characters (the limit is 2048)"},
      {"<urlset" + ns + "><url><loc>http://a/</loc></url></urlset><urlset/>", "after the root element"},
      {"<urlset" + ns + "><url><loc>http://a/</loc></url>", "ends before </urlset>"},
      {"<!DOCTYPE lolz [<!ENTITY lol \"lol\">]><urlset" + ns + "/>", ""},
      {"<urlset" + ns + "><url><loc>http://a/</loc></url></urlset", ""},
  };
  for (const auto& [doc, why] : cases) {
    Read r = readAll(doc);
    EXPECT_FALSE(r.ok) << doc;
    EXPECT_FALSE(r.error.empty()) << doc;
    if (!why.empty()) {
      EXPECT_THAT(r.error, HasSubstr(why)) << doc;
    }
  }
}

// A refusal quotes the document, but never more than kMaxErrorBytes of it: the text is
// kept, logged at every retry and shown on the public status pages (a 20 MB element
// name gave a 20 MB /status before).
TEST(SitemapTest, ARefusalQuotesAtMostABoundedPartOfTheDocument) {
  const std::string name(1'000'000, 'r');
  for (const std::string& doc : {"<" + name + "/>", std::string(kHead) + "<url><" + name + "/></url></urlset>"}) {
    Read r = readAll(doc);
    EXPECT_FALSE(r.ok);
    EXPECT_FALSE(r.error.empty());
    EXPECT_LE(r.error.size(), sitemap::kMaxErrorBytes + 3) << r.error.substr(0, 80);
  }
  EXPECT_EQ(sitemap::boundedError("short"), "short");
  const std::string cut = sitemap::boundedError(std::string(299, 'a') + "\xc3\xa9tail" + std::string(100, 'b'));
  EXPECT_EQ(cut, std::string(299, 'a') + "…");  // never half a character
}

TEST(SitemapTest, AnUnreadableLastmodIsCountedNotFatal) {
  Read r = readAll(kHead + "<url><loc>http://a/x</loc><lastmod>yesterday</lastmod></url>"
                           "<url><loc>http://a/y</loc><lastmod>2024-02-30</lastmod></url></urlset>");
  ASSERT_TRUE(r.ok) << r.error;
  ASSERT_EQ(r.entries.size(), 2u);
  EXPECT_FALSE(r.entries[0].lastmod.has_value());
  EXPECT_EQ(r.bad_lastmods, 2u);
}

TEST(W3cDatetimeTest, EveryProfileOfTheNoteAndNothingElse) {
  const std::int64_t day = parseTime("2024-05-01T00:00:00Z").value();
  EXPECT_EQ(parseW3cDatetime("2024"), parseTime("2024-01-01T00:00:00Z"));
  EXPECT_EQ(parseW3cDatetime("2024-05"), day);
  EXPECT_EQ(parseW3cDatetime("2024-05-01"), day);
  EXPECT_EQ(parseW3cDatetime("2024-05-01T10:20+01:00"), day + 9 * 3600 + 20 * 60);
  EXPECT_EQ(parseW3cDatetime("2024-05-01T10:20:30Z"), day + 10 * 3600 + 20 * 60 + 30);
  EXPECT_EQ(parseW3cDatetime("2024-05-01T10:20:30.45-02:00"), day + 12 * 3600 + 20 * 60 + 30);
  for (const char* bad : {"", "24", "2024-5-1", "2024-13", "2024-02-30", "2024-05-01T10:20", "2024-05-01 10:20Z",
                          "2024-05-01T10:20:30", "1714550400", "2024-05-01T25:00Z", "2024-05-01T10:20:30+2"}) {
    EXPECT_FALSE(parseW3cDatetime(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace lcc::sitemap
