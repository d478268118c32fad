// The CU query engine over storage-memory with real content files: filters, order,
// count/last_seq, content of this and other machines, and an incremental mirror
// driven by `since seq` that must reproduce the store after updates and removals.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "cu_test_util.h"

namespace lcc {
namespace {

using cutest::CuWorld;
using cutest::parseTarAnswer;
using cutest::parseXmlAnswer;
using proto::CuQuery;

CuQuery xmlQuery() { return CuQuery{}; }

std::vector<std::string> urlsOf(const cutest::XmlAnswer& a) {
  std::vector<std::string> out;
  for (const auto& u : a.urls) out.push_back(u.attr("c"));
  return out;
}

class QueryEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    w_.put(1, "http://a.org/docs/1.html", "text/html", "one");          // seq 1
    w_.put(1, "http://a.org/docs/2.pdf", "application/pdf", "two");     // 2
    w_.put(2, "http://b.org/x.txt", "text/plain", "three");             // 3
    w_.put(1, "http://a.org/other/3.html", "text/html", "four");        // 4
    w_.remove(1, "http://a.org/docs/2.pdf", "application/pdf");         // 5 (tombstone)
    w_.put(2, "http://b.org/y.html", "text/html", "six", "m2");         // 6, another machine
    engine_ = w_.makeEngine();
  }

  cutest::XmlAnswer xml(CuQuery q) {
    Status s;
    std::string out = cutest::runQuery(*engine_, q, &s);
    EXPECT_TRUE(s.isOk()) << s.toString();
    auto a = parseXmlAnswer(out);
    EXPECT_TRUE(a.ok) << a.error << "\n" << out;
    EXPECT_EQ(a.count, a.urls.size());
    return a;
  }

  CuWorld w_;
  std::unique_ptr<cu::QueryEngine> engine_;
};

TEST_F(QueryEngineTest, EverythingInChangeOrderWithoutTombstones) {
  auto a = xml(xmlQuery());
  EXPECT_EQ(urlsOf(a), (std::vector<std::string>{"http://a.org/docs/1.html", "http://b.org/x.txt",
                                                 "http://a.org/other/3.html", "http://b.org/y.html"}));
  EXPECT_EQ(a.last_seq, 6u);
  EXPECT_EQ(a.urls[0].attr("seq"), "1");
  EXPECT_EQ(a.urls[3].attr("seq"), "6");
}

TEST_F(QueryEngineTest, Filters) {
  CuQuery q;
  q.providers = {1};
  EXPECT_EQ(urlsOf(xml(q)), (std::vector<std::string>{"http://a.org/docs/1.html", "http://a.org/other/3.html"}));
  q.deleted = true;
  EXPECT_EQ(urlsOf(xml(q)), (std::vector<std::string>{"http://a.org/docs/1.html", "http://a.org/other/3.html",
                                                      "http://a.org/docs/2.pdf"}));
  CuQuery m;
  m.mimes = {"text/*"};
  m.prefixes = {"http://a.org/docs/", "http://b.org/"};
  EXPECT_EQ(urlsOf(xml(m)), (std::vector<std::string>{"http://a.org/docs/1.html", "http://b.org/x.txt",
                                                      "http://b.org/y.html"}));
  CuQuery s;
  s.since_seq = 3;
  s.deleted = true;
  auto a = xml(s);
  EXPECT_EQ(urlsOf(a), (std::vector<std::string>{"http://a.org/other/3.html", "http://a.org/docs/2.pdf",
                                                 "http://b.org/y.html"}));
  EXPECT_EQ(a.urls[1].attr("deleted"), "yes");
}

TEST_F(QueryEngineTest, SinceTimeFiltersOnStoredTime) {
  w_.clock().advance(Millis(3600 * 1000));
  w_.put(3, "http://c.org/late.html", "text/html", "late");  // seq 7, an hour later
  CuQuery q;
  q.since_time = toUnixMillis(w_.clock().now()) / 1000;
  auto a = xml(q);
  EXPECT_EQ(urlsOf(a), std::vector<std::string>{"http://c.org/late.html"});
  EXPECT_EQ(a.last_seq, 7u);  // so that the next query can continue by seq
}

TEST_F(QueryEngineTest, LastSeqWhenNothingMatchesOrALimitCuts) {
  CuQuery none;
  none.providers = {99};
  auto a = xml(none);
  EXPECT_EQ(a.count, 0u);
  EXPECT_EQ(a.last_seq, 6u) << "nothing matches: everything up to maxSeq was looked at";

  CuQuery lim;
  lim.limit = 2;
  a = xml(lim);
  EXPECT_EQ(a.count, 2u);
  EXPECT_EQ(a.last_seq, 3u) << "cut by the limit: the seq of the last record given";
  lim.since_seq = a.last_seq;
  a = xml(lim);
  EXPECT_EQ(urlsOf(a), (std::vector<std::string>{"http://a.org/other/3.html", "http://b.org/y.html"}));
  EXPECT_EQ(a.last_seq, 6u) << "the limit was reached exactly with nothing left: maxSeq";

  CuQuery zero;
  zero.limit = 0;
  zero.since_seq = 1;
  a = xml(zero);
  EXPECT_EQ(a.count, 0u);
  EXPECT_EQ(a.last_seq, 1u) << "limit 0 with matches left: since, unchanged";

  // cu.default_limit applies when the query has none.
  auto opts = w_.engineOptions();
  opts.default_limit = 1;
  auto e = w_.makeEngine(opts);
  auto d = parseXmlAnswer(cutest::runQuery(*e, CuQuery{}));
  EXPECT_EQ(d.count, 1u);
  EXPECT_EQ(d.last_seq, 1u);
}

TEST_F(QueryEngineTest, ContentOfThisMachineAndMarkersForOthers) {
  CuQuery q;
  q.content = true;
  q.deleted = true;
  auto a = xml(q);
  ASSERT_EQ(a.urls.size(), 5u);
  EXPECT_EQ(a.urls[0].content, "one");
  EXPECT_EQ(a.urls[1].content, "three");
  EXPECT_EQ(a.urls[2].content, "four");
  EXPECT_FALSE(a.urls[3].content.has_value());  // the tombstone
  EXPECT_EQ(a.urls[4].missing, "other-machine");
}

TEST_F(QueryEngineTest, UnreadableContentIsOmittedNotFatal) {
  // A file of the wrong size (replaced underneath) and a file name that tries to escape.
  auto r = w_.put(4, "http://d.org/a.html", "text/html", "abc");
  {
    std::ofstream f(w_.contentDir() + "/" + r.filename, std::ios::trunc);
    f << "a much longer file that is not this record's content";
  }
  ContentRecord evil = r;
  evil.key.url = "http://d.org/evil.html";
  evil.seq = r.seq + 1;
  evil.filename = "../../../../etc/passwd";
  w_.putMany({evil});
  CuQuery q;
  q.providers = {4};
  q.content = true;
  auto a = xml(q);
  ASSERT_EQ(a.urls.size(), 2u);
  EXPECT_EQ(a.urls[0].missing, "unreadable");
  EXPECT_EQ(a.urls[1].missing, "unreadable");
}

TEST_F(QueryEngineTest, BadQueriesAreInvalidArgument) {
  CuQuery q;
  q.format = "zip";
  auto p = engine_->prepare(q);
  ASSERT_FALSE(p.isOk());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("xml"), std::string::npos) << "names the known formats";
}

TEST_F(QueryEngineTest, RecordsChangedBetweenCountAndStreamAreNotRepeated) {
  auto p = engine_->prepare(CuQuery{});
  ASSERT_TRUE(p.isOk());
  EXPECT_EQ((*p)->header().count, 4u);
  // Record seq 1 is refetched (new seq 7) before the answer streams.
  w_.put(1, "http://a.org/docs/1.html", "text/html", "one, again");
  cutest::StringSink sink;
  ASSERT_TRUE((*p)->stream(sink).isOk());
  auto a = parseXmlAnswer(sink.data);
  ASSERT_TRUE(a.ok) << a.error;
  EXPECT_EQ(a.last_seq, 6u);
  EXPECT_EQ(urlsOf(a), (std::vector<std::string>{"http://b.org/x.txt", "http://a.org/other/3.html",
                                                 "http://b.org/y.html"}));
  // ... and it is in the next answer, once.
  CuQuery next;
  next.since_seq = a.last_seq;
  EXPECT_EQ(urlsOf(xml(next)), std::vector<std::string>{"http://a.org/docs/1.html"});
}

TEST_F(QueryEngineTest, TarAnswersComeInUrlOrderWithTheSameRecords) {
  CuQuery q;
  q.format = "tar.gz";
  q.deleted = true;
  Status s;
  auto t = parseTarAnswer(cutest::runQuery(*engine_, q, &s));
  ASSERT_TRUE(s.isOk()) << s.toString();
  ASSERT_TRUE(t.ok) << t.error;
  std::vector<std::string> urls;
  for (const auto& u : t.manifest.urls) urls.push_back(u.attr("c"));
  EXPECT_EQ(urls, (std::vector<std::string>{"http://a.org/docs/1.html", "http://a.org/docs/2.pdf",
                                            "http://a.org/other/3.html", "http://b.org/x.txt", "http://b.org/y.html"}));
  EXPECT_EQ(t.manifest.last_seq, 6u);
  std::vector<std::string> members;
  for (const auto& m : t.members) members.push_back(m.name);
  EXPECT_EQ(members, (std::vector<std::string>{"1/a.org/docs/1.html", "1/a.org/other/3.html", "2/b.org/x.txt",
                                               "MANIFEST.xml"}));
  EXPECT_EQ(t.members[0].data, "one");
  EXPECT_EQ(t.manifest.urls[4].attr("missing"), "other-machine");

  // With URL ordering off, the same records in change order.
  auto opts = w_.engineOptions();
  opts.url_order_scan_factor = 0;
  auto e = w_.makeEngine(opts);
  auto t2 = parseTarAnswer(cutest::runQuery(*e, q));
  ASSERT_TRUE(t2.ok) << t2.error;
  EXPECT_EQ(t2.manifest.urls.front().attr("seq"), "1");
  EXPECT_EQ(t2.manifest.urls.back().attr("seq"), "6");
  EXPECT_EQ(t2.members.size(), t.members.size());
}

// A content user mirrors the cache with `since seq` and small limits while providers
// change, refetch and remove URLs between its visits; at the end its copy (URL ->
// content) equals the store, and no change was delivered twice.
TEST(IncrementalMirror, ReproducesTheCacheExactly) {
  CuWorld w;
  auto engine = w.makeEngine();
  std::mt19937 rng(7);
  std::map<std::tuple<ProviderId, std::string, std::string>, std::string> truth;
  std::map<std::string, std::string> mirror;  // "pid c m" -> content
  std::set<ChangeSeq> delivered;
  ChangeSeq since = 0;
  for (int round = 0; round < 40; ++round) {
    for (int k = 0; k < 25; ++k) {
      ProviderId pid = 1 + rng() % 3;
      std::string url = "http://p" + std::to_string(pid) + ".org/" + std::to_string(rng() % 60) + ".html";
      std::string mime = rng() % 5 == 0 ? "text/plain" : "text/html";
      auto key = std::make_tuple(pid, url, mime);
      if (truth.count(key) && rng() % 3 == 0) {
        w.remove(pid, url, mime);
        truth.erase(key);
      } else {
        std::string content = "v" + std::to_string(round) + "-" + std::to_string(k) + "-" + url;
        w.put(pid, url, mime, content);
        truth[key] = content;
      }
    }
    // Visit: pages of at most 7 records until caught up.
    for (;;) {
      CuQuery q;
      q.since_seq = since;
      q.deleted = true;
      q.content = true;
      q.limit = 7;
      auto a = parseXmlAnswer(cutest::runQuery(*engine, q));
      ASSERT_TRUE(a.ok) << a.error;
      for (const auto& u : a.urls) {
        ChangeSeq seq = std::stoull(u.attr("seq"));
        ASSERT_TRUE(delivered.insert(seq).second) << "seq " << seq << " delivered twice";
        ASSERT_GT(seq, since);
        ASSERT_LE(seq, a.last_seq);
        const std::string id = u.attr("pid") + " " + u.attr("c") + " " + u.attr("m");
        if (u.attr("deleted") == "yes") {
          mirror.erase(id);
        } else {
          ASSERT_TRUE(u.content.has_value());
          mirror[id] = *u.content;
        }
      }
      since = a.last_seq;
      if (since == w.store().maxSeq().value()) break;
    }
  }
  std::map<std::string, std::string> expected;
  for (const auto& [key, content] : truth) {
    expected[std::to_string(std::get<0>(key)) + " " + std::get<1>(key) + " " + std::get<2>(key)] = content;
  }
  EXPECT_EQ(mirror, expected);
}

}  // namespace
}  // namespace lcc
