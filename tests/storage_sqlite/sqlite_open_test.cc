// storage-sqlite: files, identity checks, clean-shutdown reporting, options.
#include <sqlite3.h>

#include <filesystem>
#include <fstream>

#include "sqlite_test_util.h"

namespace lcc::testing {
namespace {

// Runs SQL on a store file behind the plugin's back (what an operator or another
// program might do).
void execRaw(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

using SqliteOpenTest = SqliteStoreTest;

// A providers file made before ProviderRecord::state_reason gets the column when it is
// opened; its rows read with an empty reason and take a reason afterwards.
TEST_F(SqliteOpenTest, AnOlderProvidersFileGainsTheStateReasonColumn) {
  ProviderRecord p;
  p.state = ProviderState::kActive;
  p.prefixes = {"http://old.example/"};
  {
    auto s = openProviders();
    ASSERT_TRUE(s);
    ASSERT_TRUE(s->create(p).isOk());
    ASSERT_TRUE(s->close().isOk());
  }
  execRaw(dir_.file("providers.sqlite"), "ALTER TABLE providers DROP COLUMN state_reason");
  execRaw(dir_.file("providers.sqlite"), "ALTER TABLE providers DROP COLUMN sitemap_url");
  execRaw(dir_.file("providers.sqlite"), "ALTER TABLE providers DROP COLUMN sitemap_interval");
  auto s = openProviders();
  ASSERT_TRUE(s);
  auto got = s->get(1);
  ASSERT_TRUE(got.isOk() && got->has_value()) << got.status().toString();
  EXPECT_EQ((*got)->state_reason, "");
  EXPECT_EQ((*got)->prefixes, p.prefixes);
  ASSERT_TRUE(s->modify(1, [](ProviderRecord& r) {
                 r.state = ProviderState::kSuspended;
                 r.state_reason = "the secret file is gone";
                 return Status::ok();
               }).isOk());
  EXPECT_EQ((*s->get(1))->state_reason, "the secret file is gone");
  EXPECT_EQ((*got)->sitemap_url, "");
  EXPECT_EQ((*got)->sitemap_interval, Millis(0));
  ASSERT_TRUE(s->modify(1, [](ProviderRecord& r) {
                 r.sitemap_url = "http://old.example/sitemap.xml";
                 r.sitemap_interval = Millis(60000);
                 return Status::ok();
               }).isOk());
  EXPECT_EQ((*s->get(1))->sitemap_url, "http://old.example/sitemap.xml");
  EXPECT_EQ((*s->get(1))->sitemap_interval, Millis(60000));
}

// A content file made before ContentRecord::created_seq gets the column when it is
// opened: its rows read as 0 (unknown) and keep it through updates; a new URL gets the
// seq of its first put.
TEST_F(SqliteOpenTest, AnOlderContentFileGainsTheCreatedSeqColumn) {
  {
    auto c = openContent();
    ASSERT_TRUE(c);
    ContentBatch b;
    b.put(makeRecord(1, "http://old.example/a", 1));
    ASSERT_TRUE(c->apply(b).isOk());
    ASSERT_TRUE(c->close().isOk());
  }
  execRaw(dir_.file("content.sqlite"), "ALTER TABLE lcc DROP COLUMN created_seq");
  auto c = openContent();
  ASSERT_TRUE(c);
  const std::string a = encodeUrlKey(makeRecord(1, "http://old.example/a", 1).key);
  auto got = c->get(a);
  ASSERT_TRUE(got.isOk() && got->has_value()) << got.status().toString();
  EXPECT_EQ((*got)->created_seq, 0u);
  EXPECT_EQ((*got)->size, 101u);
  ContentBatch b;
  b.put(makeRecord(1, "http://old.example/a", 2));
  b.put(makeRecord(1, "http://old.example/b", 3));
  ASSERT_TRUE(c->apply(b).isOk());
  EXPECT_EQ((*c->get(a))->created_seq, 0u) << "an update of an old row keeps 'unknown'";
  EXPECT_EQ((*c->get(encodeUrlKey(makeRecord(1, "http://old.example/b", 3).key)))->created_seq, 3u);
}

// A content file made before ContentRecord::etag (it has created_seq, not etag) gets the
// column when it is opened: its rows read with no ETag and take one afterwards.
TEST_F(SqliteOpenTest, AnOlderContentFileGainsTheEtagColumn) {
  {
    auto c = openContent();
    ASSERT_TRUE(c);
    ContentBatch b;
    b.put(makeRecord(1, "http://old.example/a", 1));
    ASSERT_TRUE(c->apply(b).isOk());
    ASSERT_TRUE(c->close().isOk());
  }
  execRaw(dir_.file("content.sqlite"), "ALTER TABLE lcc DROP COLUMN etag");
  auto c = openContent();
  ASSERT_TRUE(c);
  const std::string a = encodeUrlKey(makeRecord(1, "http://old.example/a", 1).key);
  auto got = c->get(a);
  ASSERT_TRUE(got.isOk() && got->has_value()) << got.status().toString();
  EXPECT_EQ((*got)->etag, "");
  EXPECT_EQ((*got)->created_seq, 1u);
  ContentRecord r = makeRecord(1, "http://old.example/a", 2);
  r.etag = "\"5e-61a2\"";
  ContentBatch b;
  b.put(r);
  ASSERT_TRUE(c->apply(b).isOk());
  EXPECT_EQ((*c->get(a))->etag, "\"5e-61a2\"");
}

TEST_F(SqliteOpenTest, EachStoreIsItsOwnFileUnderDataDir) {
  auto q = openQueue();
  auto c = openContent();
  auto p = openProviders();
  ASSERT_TRUE(q && c && p);
  for (const char* f : {"queue.sqlite", "content.sqlite", "providers.sqlite"}) {
    EXPECT_TRUE(std::filesystem::exists(dir_.file(f))) << f;
  }
  for (const StoreOpenInfo* info : {&q->openInfo(), &c->openInfo(), &p->openInfo()}) {
    EXPECT_EQ(info->engine, "sqlite");
    EXPECT_TRUE(info->persistent);
    EXPECT_TRUE(info->created);
    EXPECT_TRUE(info->clean_shutdown);
    EXPECT_FALSE(info->may_have_lost_synced);
  }
  EXPECT_TRUE(q->close().isOk());
  EXPECT_TRUE(c->close().isOk());
  EXPECT_TRUE(p->close().isOk());
}

TEST_F(SqliteOpenTest, PathOptionPlacesTheFile) {
  auto q = openQueue({{"path", "sub/dir/q.db"}});
  ASSERT_TRUE(q);
  EXPECT_TRUE(std::filesystem::exists(dir_.file("sub/dir/q.db")));
  EXPECT_TRUE(q->close().isOk());
}

TEST_F(SqliteOpenTest, CleanCloseIsReportedOnReopen) {
  {
    auto q = openQueue();
    ASSERT_TRUE(q);
    EXPECT_TRUE(q->close().isOk());
    EXPECT_TRUE(q->close().isOk()) << "closing twice is harmless";
  }
  auto q = openQueue();
  ASSERT_TRUE(q);
  EXPECT_FALSE(q->openInfo().created);
  EXPECT_TRUE(q->openInfo().clean_shutdown);
  EXPECT_TRUE(q->close().isOk());
}

TEST_F(SqliteOpenTest, DroppedWithoutCloseIsAnUncleanShutdown) {
  {
    auto c = openContent();
    ASSERT_TRUE(c);
    ContentBatch b;
    b.put(makeRecord(1, "http://a/1", 1));
    ASSERT_TRUE(c->apply(b).isOk());
    ASSERT_TRUE(c->sync().isOk());
    // No close(): as if the process died.
  }
  auto c = openContent();
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->openInfo().created);
  EXPECT_FALSE(c->openInfo().clean_shutdown);
  EXPECT_FALSE(c->openInfo().may_have_lost_synced);
  auto r = c->get(encodeUrlKey(UrlKey{1, "http://a/1", "text/html"}));
  ASSERT_TRUE(r.isOk());
  EXPECT_TRUE(r->has_value()) << "a synced record survives";
  ASSERT_TRUE(c->close().isOk());
  // The flag is set again by a clean close.
  auto again = openContent();
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->openInfo().clean_shutdown);
}

TEST_F(SqliteOpenTest, AnotherStoresFileIsRefused) {
  {
    auto q = openQueue({{"path", "x.sqlite"}});
    ASSERT_TRUE(q);
    ASSERT_TRUE(q->close().isOk());
  }
  auto c = registry_.makeContentStore("storage-sqlite", options({{"path", "x.sqlite"}}));
  ASSERT_FALSE(c.isOk());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("holds the queue store, not the content store"), std::string::npos)
      << c.status().toString();
}

TEST_F(SqliteOpenTest, AForeignSqliteDatabaseIsRefused) {
  execRaw(dir_.file("queue.sqlite"), "CREATE TABLE t(x); INSERT INTO t VALUES(1);");
  auto q = registry_.makeQueueStore("storage-sqlite", options());
  ASSERT_FALSE(q.isOk());
  EXPECT_NE(q.status().message().find("storage-sqlite did not make"), std::string::npos) << q.status().toString();
  // The file is left as it was.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(dir_.file("queue.sqlite").c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_schema", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(st, 0), 1);
  sqlite3_finalize(st);
  sqlite3_close(db);
}

TEST_F(SqliteOpenTest, ANonSqliteFileIsRefusedAsCorruption) {
  {
    std::ofstream f(dir_.file("content.sqlite"), std::ios::binary);
    f << "KC\n" << std::string(8192, 'x');  // e.g. another engine's file
  }
  auto c = registry_.makeContentStore("storage-sqlite", options());
  ASSERT_FALSE(c.isOk());
  EXPECT_EQ(c.status().code(), StatusCode::kCorruption);
  EXPECT_NE(c.status().message().find("content.sqlite"), std::string::npos) << c.status().toString();
  EXPECT_NE(c.status().message().find("not an SQLite database"), std::string::npos) << c.status().toString();
}

TEST_F(SqliteOpenTest, ANewerFormatOrAnotherPluginIsRefused) {
  {
    auto p = openProviders();
    ASSERT_TRUE(p);
    ASSERT_TRUE(p->close().isOk());
  }
  execRaw(dir_.file("providers.sqlite"), "UPDATE lcc_store SET value = '2' WHERE name = 'format'");
  auto p = registry_.makeProviderStore("storage-sqlite", options());
  ASSERT_FALSE(p.isOk());
  EXPECT_NE(p.status().message().find("format 2"), std::string::npos) << p.status().toString();

  execRaw(dir_.file("providers.sqlite"),
          "UPDATE lcc_store SET value = '1' WHERE name = 'format';"
          "UPDATE lcc_store SET value = 'storage-other' WHERE name = 'plugin'");
  p = registry_.makeProviderStore("storage-sqlite", options());
  ASSERT_FALSE(p.isOk());
  EXPECT_NE(p.status().message().find("made by 'storage-other'"), std::string::npos) << p.status().toString();
}

TEST_F(SqliteOpenTest, BadSynchronousWordIsRefused) {
  auto q = registry_.makeQueueStore("storage-sqlite", options({{"synchronous", "fsync"}}));
  // "fsync" passes the length bounds; the plugin refuses it by name.
  ASSERT_FALSE(q.isOk());
  EXPECT_EQ(q.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(q.status().message().find("synchronous"), std::string::npos) << q.status().toString();
  EXPECT_FALSE(registry_.defaultOptions("storage-sqlite", {{"max_readers", "0"}}).isOk());
  EXPECT_FALSE(registry_.defaultOptions("storage-sqlite", {{"no_such_option", "1"}}).isOk());
}

TEST_F(SqliteOpenTest, SchemaHasTheIndexesTheScansUse) {
  {
    auto q = openQueue();
    auto c = openContent();
    ASSERT_TRUE(q && c);
    ASSERT_TRUE(q->close().isOk());
    ASSERT_TRUE(c->close().isOk());
  }
  auto plan = [](const std::string& path, const std::string& sql) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, ("EXPLAIN QUERY PLAN " + sql).c_str(), -1, &st, nullptr), SQLITE_OK);
    std::string out;
    while (sqlite3_step(st) == SQLITE_ROW) out += reinterpret_cast<const char*>(sqlite3_column_text(st, 3)) + std::string("\n");
    sqlite3_finalize(st);
    sqlite3_close(db);
    return out;
  };
  const std::string q = dir_.file("queue.sqlite"), c = dir_.file("content.sqlite");
  EXPECT_NE(plan(q, "SELECT * FROM qpsdb WHERE slot = 3 ORDER BY pset").find("qpsdb_by_slot"), std::string::npos);
  EXPECT_EQ(plan(q, "SELECT * FROM qpsdb WHERE slot = 3 ORDER BY pset").find("TEMP B-TREE"), std::string::npos);
  EXPECT_NE(plan(q, "SELECT * FROM qpsdb WHERE pset = 3 AND slot = 1").find("PRIMARY KEY"), std::string::npos);
  EXPECT_NE(plan(q, "SELECT * FROM fsmdb WHERE machine = 'm1' ORDER BY filename").find("PRIMARY KEY"),
            std::string::npos);
  EXPECT_NE(plan(c, "SELECT * FROM lcc WHERE seq > 5 ORDER BY seq").find("INTEGER PRIMARY KEY"), std::string::npos);
  EXPECT_NE(plan(c, "SELECT * FROM lcc WHERE key > x'00000001' AND key < x'00000002' ORDER BY key").find("INDEX"),
            std::string::npos);
}

}  // namespace
}  // namespace lcc::testing
