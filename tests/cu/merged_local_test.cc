// A merged answer through a real query engine (storage-memory, no peers): the engine
// reads its own part of a cursor token by its lcc.store_id, runMergedQuery() pages
// this node's store with the token, a small limit, and refusals; MergedExport writes it
// through the real exporter plugins (XML with content, tar.gz) with the token as
// last_seq, and never gives a body that is not the listed record's.
#include <gtest/gtest.h>

#include "common/config/config.h"
#include "common/content_meta.h"
#include "cu/merged_export.h"
#include "cu/merged_query.h"
#include "cu_test_util.h"
#include "proto/cu_cursor.h"

namespace lcc {
namespace {

using cutest::CuWorld;

class MergedLocalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 5; ++i) w_.put(1, "http://a.org/" + std::to_string(i), "text/html", "x");  // seq 1..5
    w_.remove(1, "http://a.org/2", "text/html");                                                  // 6
    engine_ = w_.makeEngine();
    peers_ = cu::PeerOptions::fromConfig(Config::defaults());
  }
  void nameStore(const std::string& id) {
    ContentBatch b;
    b.putMeta(kContentMetaStoreId, id);
    ASSERT_TRUE(w_.store().apply(b).isOk());
  }
  static std::string token(std::initializer_list<std::pair<const char*, ChangeSeq>> parts) {
    proto::CuCursor c;
    for (const auto& [s, seq] : parts) EXPECT_TRUE(c.set(s, seq).isOk());
    return proto::encodeCuCursor(c);
  }

  CuWorld w_;
  // The merged answer to `q` written by the exporter of q.format.
  std::string exported(const cu::MergedResult& r, const proto::CuQuery& q) {
    Status s;
    std::string out = cutest::exportMerged(w_, *engine_, r, q, &s);
    EXPECT_TRUE(s.isOk()) << s.message();
    return out;
  }

  std::unique_ptr<cu::QueryEngine> engine_;
  cu::PeerOptions peers_;
};

TEST_F(MergedLocalTest, TheEngineReadsItsOwnPartOfACursor) {
  proto::CuQuery q;
  q.since_cursor = token({{"other", 1}, {"s1", 3}});
  auto before = cutest::parseXmlAnswer(cutest::runQuery(*engine_, q));
  EXPECT_EQ(before.count, 4u) << "no lcc.store_id yet: the store's part is 0";
  nameStore("s1");
  auto after = cutest::parseXmlAnswer(cutest::runQuery(*engine_, q));
  ASSERT_EQ(after.urls.size(), 2u);
  EXPECT_EQ(after.urls[0].attr("seq"), "4");
  EXPECT_EQ(after.last_seq, 6u) << "one LCC answers a plain seq";
}

TEST_F(MergedLocalTest, PagesThroughThisNodesStoreWithTheToken) {
  nameStore("s1");
  proto::CuQuery q;
  q.deleted = true;
  q.limit = 4;
  auto first = cu::runMergedQuery(q, engine_.get(), peers_, 0);
  ASSERT_TRUE(first.isOk()) << first.status().message();
  ASSERT_EQ(first->answer.records.size(), 4u);
  EXPECT_EQ(first->answer.records[0].source, "s1");
  const std::string xml = exported(*first, q);
  EXPECT_NE(xml.find("last_seq=\"" + first->token + "\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("source=\"s1\"/>"), std::string::npos) << xml;
  EXPECT_EQ(first->answer.records[3].record.seq, 5u);  // seq 3 was replaced by the removal, seq 6
  EXPECT_EQ(proto::decodeCuCursor(first->token)->seqOf("s1"), 5u);

  q.since_cursor = first->token;
  auto second = cu::runMergedQuery(q, engine_.get(), peers_, 0);
  ASSERT_TRUE(second.isOk());
  ASSERT_EQ(second->answer.records.size(), 1u);
  EXPECT_EQ(second->answer.records[0].record.seq, 6u);
  EXPECT_TRUE(second->answer.records[0].record.deleted);
  q.since_cursor = second->token;
  auto third = cu::runMergedQuery(q, engine_.get(), peers_, 0);
  ASSERT_TRUE(third.isOk());
  EXPECT_TRUE(third->answer.records.empty());
  EXPECT_EQ(third->token, second->token);
}

TEST_F(MergedLocalTest, APlainSeqAndADownPeerAreHandled) {
  nameStore("s1");
  proto::CuQuery plain;
  plain.since_seq = 3;
  auto p = cu::runMergedQuery(plain, engine_.get(), peers_, 0);
  ASSERT_FALSE(p.isOk());
  EXPECT_NE(p.status().message().find("not a plain seq"), std::string::npos);
  // A peer that is down is left out and named; this node's part still moves.
  peers_.peers = {"http://127.0.0.1:1"};
  peers_.timeout_ms = 2000;
  auto down = cu::runMergedQuery(proto::CuQuery{}, engine_.get(), peers_, 0);
  ASSERT_TRUE(down.isOk()) << down.status().message();
  ASSERT_EQ(down->answer.unreachable.size(), 1u);
  EXPECT_NE(down->answer.unreachable[0].find("http://127.0.0.1:1"), std::string::npos);
  EXPECT_EQ(down->answer.records.size(), 4u);
}

TEST_F(MergedLocalTest, ContentComesInXmlAndTarWithTheTokenAsLastSeq) {
  nameStore("s1");
  proto::CuQuery q;
  q.content = true;
  auto r = cu::runMergedQuery(q, engine_.get(), peers_, 0);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  auto xml = cutest::parseXmlAnswer(exported(*r, q));
  ASSERT_TRUE(xml.ok) << xml.error;
  ASSERT_EQ(xml.urls.size(), 4u);
  for (const auto& u : xml.urls) {
    EXPECT_EQ(u.content, std::optional<std::string>("x")) << u.attr("c");
    EXPECT_EQ(u.attr("source"), "s1");
  }
  q.format = "tar.gz";
  q.content = false;
  const std::string gz = exported(*r, q);
  auto tar = cutest::parseTarAnswer(gz);
  ASSERT_TRUE(tar.ok) << tar.error;
  ASSERT_EQ(tar.members.size(), 5u) << "four files and MANIFEST.xml";
  EXPECT_EQ(tar.members.back().name, "MANIFEST.xml");
  EXPECT_EQ(tar.members[0].data, "x");
  EXPECT_EQ(tar.manifest.count, 4u);
  EXPECT_NE(gz.size(), 0u);
  const std::string manifest = tar.members.back().data;
  EXPECT_NE(manifest.find("last_seq=\"" + r->token + "\""), std::string::npos) << manifest;
  EXPECT_NE(manifest.find("source=\"s1\""), std::string::npos) << manifest;
}

TEST_F(MergedLocalTest, ARecordChangedAfterTheListIsMissingNeverAnotherBody) {
  nameStore("s1");
  proto::CuQuery q;
  q.content = true;
  auto r = cu::runMergedQuery(q, engine_.get(), peers_, 0);
  ASSERT_TRUE(r.isOk());
  // seq 1 is replaced (new seq, new bytes) after the list was made.
  w_.put(1, "http://a.org/0", "text/html", "changed");
  auto xml = cutest::parseXmlAnswer(exported(*r, q));
  ASSERT_TRUE(xml.ok) << xml.error;
  ASSERT_EQ(xml.urls.size(), 4u);
  EXPECT_EQ(xml.urls[0].attr("seq"), "1");
  EXPECT_FALSE(xml.urls[0].content.has_value()) << "the bytes of seq 7 given as seq 1's";
  EXPECT_EQ(xml.urls[0].missing, "unreadable");
  EXPECT_EQ(xml.urls[1].content, std::optional<std::string>("x"));
}

}  // namespace
}  // namespace lcc
