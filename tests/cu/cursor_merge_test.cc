// The merge policy of answers from several LCCs (cu/cursor_merge.h) and the reader of
// their XML answers (cu/peer_source.h parseXmlAnswer): a mirror paged through merged
// answers with a small limit, with sources going down and up, equals every source and
// never sees a change twice; hostile answers move nothing.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "cu/cursor_merge.h"
#include "cu/peer_source.h"
#include "lcc/support/cu_xml_format.h"

namespace lcc::cu {
namespace {

ContentRecord rec(ChangeSeq seq, const std::string& url, bool deleted = false) {
  ContentRecord r;
  r.seq = seq;
  r.key = UrlKey{1, url, "text/html"};
  r.deleted = deleted;
  r.stored = fromUnixMillis(1700000000000);
  return r;
}

// One LCC: its records by URL, each with the seq of its last change (as a store).
struct FakeLcc {
  std::string id;
  ChangeSeq top = 0;
  std::map<std::string, ContentRecord> by_url;

  void change(const std::string& url, bool remove) { by_url[url] = rec(++top, url, remove); }
  // The answer of QueryEngine::prepare() to since/limit (the last_seq rules of README.md).
  SourceAnswer answer(ChangeSeq since, std::uint64_t limit) const {
    SourceAnswer a;
    a.where = "http://" + id;
    a.reachable = true;
    a.source = id;
    a.since = since;
    std::vector<ContentRecord> all;
    for (const auto& [u, r] : by_url) {
      if (r.seq > since) all.push_back(r);
    }
    std::sort(all.begin(), all.end(), [](const auto& x, const auto& y) { return x.seq < y.seq; });
    const bool cut = all.size() > limit;
    if (cut) all.resize(limit);
    a.last_seq = cut ? (all.empty() ? since : all.back().seq) : top;
    a.records = std::move(all);
    return a;
  }
};

TEST(CursorMerge, SharesAreFairAndUseTheBudget) {
  EXPECT_EQ(CursorMerge::shares({10, 10, 10}, 7), (std::vector<std::size_t>{3, 2, 2}));
  EXPECT_EQ(CursorMerge::shares({100, 1, 0}, 7), (std::vector<std::size_t>{6, 1, 0}));
  EXPECT_EQ(CursorMerge::shares({2, 3}, 100), (std::vector<std::size_t>{2, 3}));
  EXPECT_EQ(CursorMerge::shares({5, 5}, 0), (std::vector<std::size_t>{5, 5}));  // 0: no limit
}

TEST(CursorMerge, CutAnswerPointsAfterTheLastRecordOfEachSource) {
  FakeLcc a{"aa"}, b{"bb"};
  for (int i = 0; i < 5; ++i) a.change("a" + std::to_string(i), false);
  for (int i = 0; i < 2; ++i) b.change("b" + std::to_string(i), false);
  MergedAnswer m = CursorMerge(proto::CuCursor(), 4).merge({b.answer(0, 4), a.answer(0, 4)});
  ASSERT_EQ(m.records.size(), 4u);
  EXPECT_EQ(m.records[0].source, "aa");  // by source, then seq
  EXPECT_EQ(m.records[1].record.seq, 2u);
  EXPECT_EQ(m.records[2].source, "bb");
  EXPECT_EQ(m.cursor.seqOf("aa"), 2u);  // cut: after the last record given
  EXPECT_EQ(m.cursor.seqOf("bb"), 2u);  // all given: its last_seq
  EXPECT_TRUE(m.unreachable.empty());
}

TEST(CursorMerge, DownOrHostileSourcesKeepTheirPart) {
  proto::CuCursor since;
  ASSERT_TRUE(since.set("aa", 3).isOk());
  ASSERT_TRUE(since.set("gone", 40).isOk());
  FakeLcc a{"aa"};
  for (int i = 0; i < 6; ++i) a.change("a" + std::to_string(i), false);
  SourceAnswer down;
  down.where = "http://down";
  down.why = "connection refused";
  SourceAnswer backwards = a.answer(3, 10);
  backwards.last_seq = 1;  // lies: below the since asked
  MergedAnswer m = CursorMerge(since, 10).merge({down, backwards});
  EXPECT_TRUE(m.records.empty());
  EXPECT_EQ(m.cursor.seqOf("aa"), 3u);
  EXPECT_EQ(m.cursor.seqOf("gone"), 40u);  // nobody answered for it: unchanged
  ASSERT_EQ(m.unreachable.size(), 2u);
  EXPECT_NE(m.unreachable[0].find("connection refused"), std::string::npos);

  SourceAnswer unordered = a.answer(3, 10);
  std::swap(unordered.records[0], unordered.records[1]);
  SourceAnswer outside = a.answer(3, 10);
  outside.records.push_back(rec(99, "x"));
  SourceAnswer old = a.answer(3, 10);
  old.records.insert(old.records.begin(), rec(2, "y"));
  SourceAnswer other_since = a.answer(0, 10);  // answered from another part than asked
  for (auto* bad : {&unordered, &outside, &old, &other_since}) {
    MergedAnswer r = CursorMerge(since, 10).merge({*bad});
    EXPECT_TRUE(r.records.empty());
    EXPECT_EQ(r.cursor.seqOf("aa"), 3u);
    EXPECT_EQ(r.unreachable.size(), 1u);
  }
  // The same store twice (two URLs of one LCC): the second is left out, nothing repeats.
  MergedAnswer twice = CursorMerge(since, 10).merge({a.answer(3, 10), a.answer(3, 10)});
  EXPECT_EQ(twice.records.size(), 3u);
  EXPECT_EQ(twice.unreachable.size(), 1u);
  ASSERT_EQ(twice.sources.size(), 1u) << "X-LCC-Sources names only what was merged";
  EXPECT_EQ(twice.sources[0].first, "aa");
}

// The property the protocol promises: a mirror paged with small limits, while the
// sources change and go down and up, ends equal to every source, and never gets the
// same (source, seq) twice.
TEST(CursorMerge, IncrementalMirrorAcrossSourcesGoingDown) {
  std::mt19937 rng(31);
  std::vector<FakeLcc> lccs = {{"0f00"}, {"a7c2"}, {"ff01"}};
  std::map<std::pair<std::string, std::string>, ContentRecord> mirror;  // (source, url)
  std::set<std::pair<std::string, ChangeSeq>> seen;
  std::string token = proto::encodeCuCursor(proto::CuCursor());
  auto page = [&](bool allow_down) {
    auto since = proto::decodeCuCursor(token);
    ASSERT_TRUE(since.isOk());
    std::vector<SourceAnswer> answers;
    for (const auto& l : lccs) {
      if (allow_down && rng() % 4 == 0) {
        answers.push_back(SourceAnswer{.where = l.id, .why = "down"});
        continue;
      }
      answers.push_back(l.answer(since->seqOf(l.id), 5));
    }
    MergedAnswer m = CursorMerge(*since, 7).merge(std::move(answers));
    ASSERT_LE(m.records.size(), 7u);
    for (const auto& r : m.records) {
      ASSERT_TRUE(seen.insert({r.source, r.record.seq}).second) << "repeated " << r.source << " " << r.record.seq;
      mirror[{r.source, r.record.key.url}] = r.record;
    }
    for (const auto& p : since->parts()) ASSERT_GE(m.cursor.seqOf(p.source), p.seq);  // never back
    token = proto::encodeCuCursor(m.cursor);
  };
  for (int round = 0; round < 300; ++round) {
    for (int k = 0; k < 4; ++k) {
      auto& l = lccs[rng() % lccs.size()];
      l.change("u" + std::to_string(rng() % 40), rng() % 5 == 0);
    }
    page(true);
  }
  for (int i = 0; i < 200; ++i) page(false);  // catch up, all up
  for (const auto& l : lccs) {
    for (const auto& [u, r] : l.by_url) {
      auto it = mirror.find({l.id, u});
      ASSERT_NE(it, mirror.end()) << l.id << " " << u;
      EXPECT_EQ(it->second.seq, r.seq) << l.id << " " << u;
      EXPECT_EQ(it->second.deleted, r.deleted);
    }
  }
}

TEST(PeerAnswer, ParsesWhatTheXmlExporterWrites) {
  std::string doc = "<?xml version=\"1.0\"?>\n<lococa:result xmlns:lococa=\"http://www.lococa.org/1.0\" count=\"2\" "
                    "last_seq=\"9\">\n";
  ContentRecord a = rec(4, "http://x.example/a?b=1&c=2");
  a.md5 = "0123456789abcdef0123456789abcdef";
  a.size = 77;
  a.mtime = 1600000000;
  a.fetch = "http://x.example/f";
  proto::appendUrlOpen(doc, a);
  doc += "/>\n";
  proto::appendUrlOpen(doc, rec(9, "http://x.example/gone", true));
  doc += "/>\n</lococa:result>\n";
  auto p = parseXmlAnswer(doc, 10);
  ASSERT_TRUE(p.isOk()) << p.status().message();
  EXPECT_EQ(p->last_seq, 9u);
  ASSERT_EQ(p->records.size(), 2u);
  EXPECT_EQ(p->records[0].key.url, a.key.url);
  EXPECT_EQ(p->records[0].md5, a.md5);
  EXPECT_EQ(p->records[0].size, 77u);
  EXPECT_EQ(p->records[0].mtime, a.mtime);
  EXPECT_EQ(p->records[0].fetch, a.fetch);
  EXPECT_TRUE(p->records[1].deleted);
  // Written again, it is the same text: a merged answer's records stay complete.
  std::string again;
  proto::appendUrlOpen(again, p->records[0]);
  std::string first;
  proto::appendUrlOpen(first, a);
  EXPECT_EQ(again, first);
}

TEST(PeerAnswer, HostileAnswersAreRefusedWithinBounds) {
  const std::string head = "<lococa:result xmlns:lococa=\"http://www.lococa.org/1.0\" count=\"1\" last_seq=\"";
  const std::string url = "<url seq=\"1\" pid=\"1\" c=\"http://a/\" m=\"text/html\" stored=\"2024-01-01T00:00:00Z\"/>";
  EXPECT_TRUE(parseXmlAnswer(head + "5\">" + url + "</lococa:result>", 1).isOk());
  const std::vector<std::string> bad = {
      head + "c1.AAAA\">" + url + "</lococa:result>",         // a merged answer as a peer's
      head + "5\">" + url + url + "</lococa:result>",         // more records than asked
      head + "5\">" + url,                                    // cut off
      head + "5\"><url seq=\"x\"/></lococa:result>",          // bad values
      "<!DOCTYPE x [<!ENTITY a \"b\">]><x/>",                   // entities
      "<other xmlns=\"urn:x\"/>",                             // not an answer
      head + "5\">" + url + "</lococa:result><more/>",        // bytes after
      head + "5\">" + std::string(200, '<') + "</lococa:result>",
      head + "5\">" + "<a><b><c><d><e>" + "</e></d></c></b></a></lococa:result>",  // too deep
  };
  for (const auto& b : bad) EXPECT_FALSE(parseXmlAnswer(b, 1).isOk()) << b;
}

}  // namespace
}  // namespace lcc::cu
