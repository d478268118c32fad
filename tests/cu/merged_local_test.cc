// A merged answer through a real query engine (storage-memory, no peers): the engine
// reads its own part of a cursor token by its lcc.store_id, and runMergedQuery() pages
// this node's store with the token, a small limit, and refusals of what it does not do.
#include <gtest/gtest.h>

#include "common/config/config.h"
#include "common/content_meta.h"
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
  const std::string xml = cu::formatMergedXml(*first);
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

TEST_F(MergedLocalTest, WhatAMergedAnswerDoesNotDoIsRefusedWithAReason) {
  nameStore("s1");
  proto::CuQuery tar;
  tar.format = "tar.gz";
  auto r = cu::runMergedQuery(tar, engine_.get(), peers_, 0);
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("format=xml without content"), std::string::npos);
  proto::CuQuery content;
  content.content = true;
  EXPECT_FALSE(cu::runMergedQuery(content, engine_.get(), peers_, 0).isOk());
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

}  // namespace
}  // namespace lcc
