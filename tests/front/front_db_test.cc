// The PMDB/FEDB tables on the private PostgreSQL of the fixture lcc_pg_server: the
// pending → placed transition and what the schema refuses (core/front/front_db.h).
#include <gtest/gtest.h>

#include "contract/server_store_options.h"
#include "front/front_db.h"

namespace lcc::front {
namespace {

class FrontDbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = testing::serverStoreSkipReason("storage-postgres"); !why.empty()) GTEST_SKIP() << why;
    opt_.conninfo = std::getenv("LCC_TEST_PG_CONNINFO");
    opt_.schema = testing::freshSchemaName();
    opt_.request_timeout = Millis(5000);
    opt_.lccs = {{"east", "127.0.0.1:1", "127.0.0.1:2", "/t", ""}, {"west", "127.0.0.1:3", "127.0.0.1:4", "/t", ""}};
    auto db = FrontDb::open(opt_);
    ASSERT_TRUE(db.isOk()) << db.status().message();
    db_ = std::move(db).value();
  }
  FrontOptions opt_;
  std::unique_ptr<FrontDb> db_;
};

TEST_F(FrontDbTest, TheConfiguredLccsAreInTheFedbOpenWithTheirLoad) {
  ASSERT_TRUE(db_->recordLoad("west", 12).isOk());
  auto rows = db_->lccs();
  ASSERT_TRUE(rows.isOk());
  ASSERT_EQ(rows.value().size(), 2u);
  EXPECT_EQ(rows.value()[0].spec.name, "east");
  EXPECT_EQ(rows.value()[1].spec.uns, "127.0.0.1:3");
  EXPECT_EQ(rows.value()[1].providers, 12u);
  EXPECT_TRUE(rows.value()[0].open);
  // A second open (a restart, another front end) keeps what is there.
  ASSERT_TRUE(FrontDb::open(opt_).isOk());
  EXPECT_EQ(db_->lccs().value()[1].providers, 12u);
}

TEST_F(FrontDbTest, ARowIsPendingUntilPlacedOnceAndIdsGoUp) {
  auto a = db_->reserve("east");
  auto b = db_->reserve("west");
  ASSERT_TRUE(a.isOk() && b.isOk());
  EXPECT_LT(a.value(), b.value());
  auto pending = db_->pending(16);
  ASSERT_TRUE(pending.isOk());
  EXPECT_EQ(pending.value().size(), 2u);
  ASSERT_TRUE(db_->markPlaced(a.value(), 7).isOk());
  EXPECT_EQ(db_->markPlaced(a.value(), 8).code(), StatusCode::kNotFound) << "placed once";
  auto m = db_->lookup(a.value());
  ASSERT_TRUE(m.isOk() && m.value());
  EXPECT_TRUE(m.value()->placed);
  EXPECT_EQ(m.value()->lcc, "east");
  EXPECT_EQ(m.value()->local_id, 7u);
  EXPECT_EQ(db_->pending(16).value().size(), 1u);
  ASSERT_TRUE(db_->drop(b.value()).isOk());
  EXPECT_FALSE(db_->lookup(b.value()).value());
}

TEST_F(FrontDbTest, OneLocalIdOfOneLccIsMappedOnceAndAnUnknownLccIsRefused) {
  auto a = db_->reserve("east");
  auto b = db_->reserve("east");
  ASSERT_TRUE(db_->markPlaced(a.value(), 3).isOk());
  EXPECT_FALSE(db_->markPlaced(b.value(), 3).isOk());
  auto c = db_->reserve("west");
  EXPECT_TRUE(db_->markPlaced(c.value(), 3).isOk()) << "another sub-LCC's 3 is another provider";
  EXPECT_FALSE(db_->reserve("north").isOk());
}

}  // namespace
}  // namespace lcc::front
