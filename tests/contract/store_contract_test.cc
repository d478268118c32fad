// The store contract suite, queue and content stores: the SAME cases on every store
// plugin (store_contract.h).
#include "store_contract.h"

namespace lcc::contract {
namespace {

// ===================================== QueueStore ====================================

TEST_P(StoreContractTest, QueueOpenInfoOfANewStore) {
  auto q = queue();
  ASSERT_TRUE(q);
  const StoreOpenInfo& info = q->openInfo();
  EXPECT_FALSE(info.engine.empty());
  EXPECT_TRUE(info.created);
  EXPECT_TRUE(info.clean_shutdown);
  EXPECT_FALSE(info.may_have_lost_synced);
  EXPECT_EQ(q->entryCount().value(), 0u);
  EXPECT_EQ(q->getMeta("nothing").value(), std::nullopt);
  EXPECT_TRUE(q->close().isOk());
}

TEST_P(StoreContractTest, QueueEntryPutGetReplaceRemove) {
  auto q = queue();
  ASSERT_TRUE(q);
  QueueEntry a = entry(1, "http://a/x.htm");
  QueueEntry b = entry(1, "http://a/y.htm");
  b.notice.browse.reset();
  b.notice.mtime.reset();
  b.notice.size.reset();
  b.notice.op = UrlOp::kDelete;
  b.op = QueueOp::kNothing;
  b.next.clear();
  QueueBatch batch;
  QueueEntry c = entry(1, "http://a/z.htm");
  c.notice.op = UrlOp::kCheck;
  batch.putEntry(a);
  batch.putEntry(b);
  batch.putEntry(c);
  ASSERT_TRUE(q->apply(batch).isOk());
  EXPECT_EQ(q->entryCount().value(), 3u);
  EXPECT_EQ(q->getEntry(encodeUrlKey(a.notice.key)).value(), a);
  EXPECT_EQ(q->getEntry(encodeUrlKey(b.notice.key)).value(), b) << "absent optionals stay absent";
  EXPECT_EQ(q->getEntry(encodeUrlKey(c.notice.key)).value(), c) << "op=check is kept";
  // The same URL with another MIME type is another row.
  EXPECT_EQ(q->getEntry(encodeUrlKey({1, "http://a/x.htm", "text/plain"})).value(), std::nullopt);

  QueueEntry a2 = a;
  a2.bad_count = 3;
  a2.notice.md5.clear();
  batch.clear();
  batch.putEntry(a2);
  ASSERT_TRUE(q->apply(batch).isOk());
  EXPECT_EQ(q->getEntry(encodeUrlKey(a.notice.key)).value(), a2) << "a put replaces";
  EXPECT_EQ(q->entryCount().value(), 3u);

  batch.clear();
  batch.removeEntry(encodeUrlKey(a.notice.key));
  batch.removeEntry(encodeUrlKey({9, "never-there", "text/html"}));  // removing nothing is fine
  ASSERT_TRUE(q->apply(batch).isOk());
  EXPECT_EQ(q->getEntry(encodeUrlKey(a.notice.key)).value(), std::nullopt);
  EXPECT_EQ(q->entryCount().value(), 2u);
  EXPECT_TRUE(q->close().isOk());
}

// getEntries() / getPSets(): several rows in one call (one round trip on a store a
// network away), answered in the order asked, absent ones nullopt, a key asked twice twice.
TEST_P(StoreContractTest, QueueBatchReadsAnswerInTheOrderAsked) {
  auto q = queue();
  ASSERT_TRUE(q);
  QueueEntry a = entry(1, "http://a/x.htm"), b = entry(2, "http://b/y.htm");
  QueueBatch batch;
  batch.putEntry(a);
  batch.putEntry(b);
  batch.putPSet(pset(7, kSlotNow));
  batch.putPSet(pset(7, 3));
  ASSERT_TRUE(q->apply(batch).isOk());
  const std::string ka = encodeUrlKey(a.notice.key), kb = encodeUrlKey(b.notice.key);
  const std::string absent = encodeUrlKey({1, "http://a/none", "text/html"});
  auto rows = q->getEntries({kb, absent, ka, kb});
  ASSERT_TRUE(rows.isOk()) << rows.status().toString();
  EXPECT_EQ(rows.value(), (std::vector<std::optional<QueueEntry>>{b, std::nullopt, a, b}));
  EXPECT_TRUE(q->getEntries({}).value().empty());
  auto lists = q->getPSets({{7, 3}, {8, kSlotNow}, {7, kSlotNow}});
  ASSERT_TRUE(lists.isOk()) << lists.status().toString();
  EXPECT_EQ(lists.value(),
            (std::vector<std::optional<PSetRecord>>{pset(7, 3), std::nullopt, pset(7, kSlotNow)}));
  EXPECT_TRUE(q->close().isOk());
}

// PutEntry::fresh is a hint (the QM read the key as absent): fresh rows read back
// like any other, and a fresh put of a row that is there replaces it, also when a
// whole batch is applied again; the store stays writable (storage-postgres COPYs
// fresh rows and, on a row that is there, writes the batch again as upserts).
TEST_P(StoreContractTest, QueueFreshPutsAreRowsLikeAnyOther) {
  auto q = queue();
  ASSERT_TRUE(q);
  QueueEntry a = entry(1, "http://a/x.htm"), b = entry(1, "http://a/y.htm"), d = entry(2, "http://d/\xff\x01");
  b.notice.browse.reset();
  b.notice.mtime.reset();
  b.notice.size.reset();
  b.next.clear();
  d.notice.view_tag = "";
  d.notice.browse = "";
  QueueBatch batch;
  batch.putEntry(a, true);
  batch.putEntry(b, true);
  ASSERT_TRUE(q->apply(batch).isOk());
  EXPECT_EQ(q->getEntry(encodeUrlKey(a.notice.key)).value(), a);
  EXPECT_EQ(q->getEntry(encodeUrlKey(b.notice.key)).value(), b) << "absent optionals stay absent";

  QueueEntry a2 = a;
  a2.bad_count = 9;
  batch.clear();
  batch.putEntry(a2, true);  // wrong: a is there
  batch.putEntry(d, true);
  batch.putMeta("pos", "2");
  for (int again = 0; again < 2; ++again) {  // the second time: the same batch applied again
    Status s = q->apply(batch);
    ASSERT_TRUE(s.isOk()) << s.toString();
    EXPECT_EQ(q->getEntry(encodeUrlKey(a.notice.key)).value(), a2) << "a fresh put replaces a row that is there";
    EXPECT_EQ(q->getEntry(encodeUrlKey(d.notice.key)).value(), d);
    EXPECT_EQ(q->getMeta("pos").value(), std::optional<std::string>("2"));
    EXPECT_EQ(q->entryCount().value(), 3u);
  }
  QueueEntry b2 = b;
  b2.bad_count = 1;
  batch.clear();
  batch.removeEntry(encodeUrlKey(b.notice.key));
  batch.putEntry(b2, true);  // remove then put: there, replaced
  batch.putEntry(entry(3, "http://e/"), true);
  batch.removeEntry(encodeUrlKey(entry(3, "http://e/").notice.key));  // put then remove: gone
  ASSERT_TRUE(q->apply(batch).isOk());
  EXPECT_EQ(q->getEntry(encodeUrlKey(b.notice.key)).value(), b2);
  EXPECT_EQ(q->getEntry(encodeUrlKey(entry(3, "http://e/").notice.key)).value(), std::nullopt);
  EXPECT_EQ(q->entryCount().value(), 3u);
  EXPECT_TRUE(q->sync().isOk()) << "still writable";
  EXPECT_TRUE(q->close().isOk());
}

TEST_P(StoreContractTest, QueueBatchAppliesInOrder) {
  auto q = queue();
  ASSERT_TRUE(q);
  QueueEntry a = entry(1, "u1");
  QueueEntry b = entry(1, "u2");
  QueueBatch batch;
  batch.putEntry(a);
  batch.removeEntry(encodeUrlKey(a.notice.key));  // put then remove: gone
  batch.removeEntry(encodeUrlKey(b.notice.key));
  batch.putEntry(b);  // remove then put: there
  batch.putPSet(pset(1, 3));
  batch.removePSet(1, 3);
  batch.putPSet(pset(2, 3));
  PSetRecord p2b = pset(2, 3);
  p2b.count = 1;
  batch.putPSet(p2b);  // last wins
  batch.putMeta("k", "v1");
  batch.putMeta("k", "v2");
  batch.putDelete({"m1", "00/00/1", fromUnixMillis(1000)});
  batch.removeDelete("m1", "00/00/1");
  ASSERT_TRUE(q->apply(batch).isOk());
  EXPECT_EQ(q->getEntry(encodeUrlKey(a.notice.key)).value(), std::nullopt);
  EXPECT_EQ(q->getEntry(encodeUrlKey(b.notice.key)).value(), b);
  EXPECT_EQ(q->getPSet(1, 3).value(), std::nullopt);
  EXPECT_EQ(q->getPSet(2, 3).value(), p2b);
  EXPECT_EQ(q->getMeta("k").value(), std::optional<std::string>("v2"));
  EXPECT_TRUE(collect<DeleteRequest>([&](auto fn) { return q->scanDeletes(std::nullopt, fn); }).empty());
  EXPECT_TRUE(q->apply(QueueBatch()).isOk()) << "an empty batch is fine";
  EXPECT_TRUE(q->sync().isOk());
  EXPECT_TRUE(q->close().isOk());
}

TEST_P(StoreContractTest, QueueScanEntriesSeesEveryRowAndStops) {
  auto q = queue();
  ASSERT_TRUE(q);
  QueueBatch batch;
  std::set<std::string> want;
  for (int i = 0; i < 600; ++i) {
    QueueEntry e = entry(1 + i % 3, "http://h/" + std::to_string(i));
    want.insert(encodeUrlKey(e.notice.key));
    batch.putEntry(e);
  }
  ASSERT_TRUE(q->apply(batch).isOk());
  std::set<std::string> seen;
  for (const auto& e : collect<QueueEntry>([&](auto fn) { return q->scanEntries(fn); })) {
    EXPECT_TRUE(seen.insert(encodeUrlKey(e.notice.key)).second) << "a row seen twice";
  }
  EXPECT_EQ(seen, want);
  int calls = 0;
  ASSERT_TRUE(q->scanEntries([&](const QueueEntry&) { return ++calls < 5; }).isOk());
  EXPECT_EQ(calls, 5);
  EXPECT_TRUE(q->close().isOk());
}

TEST_P(StoreContractTest, QueuePSetsScanInPSetSlotOrderWithSlotFilter) {
  auto q = queue();
  ASSERT_TRUE(q);
  QueueBatch batch;
  // Inserted out of order; pset ids across byte boundaries catch little-endian keys.
  for (auto [id, slot] : std::vector<std::pair<PSetId, TimeSlot>>{
           {300, 3}, {2, kSlotNow}, {1, 3}, {256, kSlotNow}, {1, kSlotNow}, {2, 0}, {1, 23}, {70000, 3}}) {
    batch.putPSet(pset(id, slot));
  }
  ASSERT_TRUE(q->apply(batch).isOk());
  auto all = collect<PSetRecord>([&](auto fn) { return q->scanPSets(std::nullopt, fn); });
  std::vector<std::pair<PSetId, TimeSlot>> got;
  for (const auto& p : all) got.emplace_back(p.pset, p.slot);
  EXPECT_EQ(got, (std::vector<std::pair<PSetId, TimeSlot>>{
                     {1, kSlotNow}, {1, 3}, {1, 23}, {2, kSlotNow}, {2, 0}, {256, kSlotNow}, {300, 3}, {70000, 3}}));
  auto slot3 = collect<PSetRecord>([&](auto fn) { return q->scanPSets(TimeSlot{3}, fn); });
  got.clear();
  for (const auto& p : slot3) got.emplace_back(p.pset, p.slot);
  EXPECT_EQ(got, (std::vector<std::pair<PSetId, TimeSlot>>{{1, 3}, {300, 3}, {70000, 3}}));
  auto now = collect<PSetRecord>([&](auto fn) { return q->scanPSets(kSlotNow, fn); });
  ASSERT_EQ(now.size(), 3u);
  EXPECT_EQ(now[0], pset(1, kSlotNow));
  int calls = 0;
  ASSERT_TRUE(q->scanPSets(std::nullopt, [&](const PSetRecord&) { return ++calls < 2; }).isOk());
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(q->close().isOk());
}

TEST_P(StoreContractTest, QueueDeletesOrderedByMachineAndFilename) {
  auto q = queue();
  ASSERT_TRUE(q);
  QueueBatch batch;
  batch.putDelete({"m2", "00/01/b", fromUnixMillis(3)});
  batch.putDelete({"m1", "00/02/a", fromUnixMillis(1)});
  batch.putDelete({"m1", "00/01/z", fromUnixMillis(2)});
  batch.putDelete({"m10", "00/00/a", fromUnixMillis(4)});
  ASSERT_TRUE(q->apply(batch).isOk());
  auto all = collect<DeleteRequest>([&](auto fn) { return q->scanDeletes(std::nullopt, fn); });
  std::vector<std::string> got;
  for (const auto& d : all) got.push_back(d.machine + ":" + d.filename);
  EXPECT_EQ(got, (std::vector<std::string>{"m1:00/01/z", "m1:00/02/a", "m10:00/00/a", "m2:00/01/b"}));
  auto m1 = collect<DeleteRequest>([&](auto fn) { return q->scanDeletes(std::string("m1"), fn); });
  ASSERT_EQ(m1.size(), 2u);
  EXPECT_EQ(m1[0], (DeleteRequest{"m1", "00/01/z", fromUnixMillis(2)}));
  EXPECT_TRUE(collect<DeleteRequest>([&](auto fn) { return q->scanDeletes(std::string("m"), fn); }).empty());
  batch.clear();
  batch.removeDelete("m1", "00/01/z");
  ASSERT_TRUE(q->apply(batch).isOk());
  EXPECT_EQ(collect<DeleteRequest>([&](auto fn) { return q->scanDeletes(std::string("m1"), fn); }).size(), 1u);
  EXPECT_TRUE(q->close().isOk());
}

TEST_P(StoreContractTest, QueueManyPSetsAndDeletesScanCompletelyInOrder) {
  auto q = queue();
  ASSERT_TRUE(q);
  QueueBatch batch;
  for (PSetId id = 700; id >= 1; --id) batch.putPSet(pset(id, static_cast<TimeSlot>(id % 7)));
  for (int i = 0; i < 900; ++i) {
    batch.putDelete({"m" + std::to_string(i % 3), "f" + std::to_string(100000 + i), fromUnixMillis(i)});
  }
  ASSERT_TRUE(q->apply(batch).isOk());
  auto all = collect<PSetRecord>([&](auto fn) { return q->scanPSets(std::nullopt, fn); });
  ASSERT_EQ(all.size(), 700u);
  for (std::size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i].pset, i + 1);
  auto slot2 = collect<PSetRecord>([&](auto fn) { return q->scanPSets(TimeSlot{2}, fn); });
  ASSERT_EQ(slot2.size(), 100u);
  for (std::size_t i = 1; i < slot2.size(); ++i) EXPECT_LT(slot2[i - 1].pset, slot2[i].pset);
  auto m1 = collect<DeleteRequest>([&](auto fn) { return q->scanDeletes(std::string("m1"), fn); });
  ASSERT_EQ(m1.size(), 300u);
  for (std::size_t i = 0; i < m1.size(); ++i) {
    EXPECT_EQ(m1[i].machine, "m1");
    if (i > 0) {
      EXPECT_LT(m1[i - 1].filename, m1[i].filename);
    }
  }
  EXPECT_EQ(collect<DeleteRequest>([&](auto fn) { return q->scanDeletes(std::nullopt, fn); }).size(), 900u);
  EXPECT_TRUE(q->close().isOk());
}

TEST_P(StoreContractTest, QueueKeepsOddBytesAndLongValues) {
  auto q = queue();
  ASSERT_TRUE(q);
  QueueEntry e = entry(0xffffffffu, std::string(2048, 'u') + "/\xc3\xa9t\xc3\xa9?a=1&b=%20");
  e.notice.view_tag = "";
  e.notice.browse = "";  // "not browsable" differs from nullopt
  QueueBatch batch;
  batch.putEntry(e);
  batch.putMeta("binary", std::string("a\0b\xff", 4));
  batch.putMeta("empty", "");
  ASSERT_TRUE(q->apply(batch).isOk());
  EXPECT_EQ(q->getEntry(encodeUrlKey(e.notice.key)).value(), e);
  EXPECT_EQ(q->getMeta("binary").value(), std::optional<std::string>(std::string("a\0b\xff", 4)));
  EXPECT_EQ(q->getMeta("empty").value(), std::optional<std::string>(""));
  EXPECT_TRUE(q->close().isOk());
}

TEST_P(StoreContractTest, QueueCallsAfterCloseFail) {
  auto q = queue();
  ASSERT_TRUE(q);
  ASSERT_TRUE(q->close().isOk());
  QueueBatch batch;
  batch.putMeta("k", "v");
  EXPECT_FALSE(q->apply(batch).isOk());
  EXPECT_FALSE(q->getMeta("k").isOk());
  EXPECT_FALSE(q->entryCount().isOk());
}

TEST_P(StoreContractTest, QueueRestartKeepsWhatWasSynced) {
  auto q = queue();
  ASSERT_TRUE(q);
  if (!q->openInfo().persistent) GTEST_SKIP() << GetParam() << " is not persistent";
  QueueBatch batch;
  batch.putEntry(entry(1, "a"));
  batch.putPSet(pset(5, 2));
  batch.putDelete({"m1", "f", fromUnixMillis(9)});
  batch.putMeta("next_pset", "6");
  ASSERT_TRUE(q->apply(batch).isOk());
  ASSERT_TRUE(q->sync().isOk());
  ASSERT_TRUE(q->close().isOk());
  q.reset();
  q = queue();
  ASSERT_TRUE(q);
  EXPECT_FALSE(q->openInfo().created);
  EXPECT_TRUE(q->openInfo().clean_shutdown);
  EXPECT_FALSE(q->openInfo().may_have_lost_synced);
  EXPECT_EQ(q->getEntry(encodeUrlKey(entry(1, "a").notice.key)).value(), entry(1, "a"));
  EXPECT_EQ(q->getPSet(5, 2).value(), pset(5, 2));
  EXPECT_EQ(collect<DeleteRequest>([&](auto fn) { return q->scanDeletes(std::nullopt, fn); }).size(), 1u);
  EXPECT_EQ(q->getMeta("next_pset").value(), std::optional<std::string>("6"));
  EXPECT_TRUE(q->close().isOk());
}

// ==================================== ContentStore ===================================

TEST_P(StoreContractTest, ContentOpenInfoOfANewStore) {
  auto c = content();
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->openInfo().engine.empty());
  EXPECT_TRUE(c->openInfo().created);
  EXPECT_TRUE(c->openInfo().clean_shutdown);
  EXPECT_EQ(c->maxSeq().value(), 0u);
  EXPECT_EQ(c->count().value(), 0u);
  EXPECT_TRUE(seqKeys(*c, 0).empty());
  EXPECT_TRUE(c->close().isOk());
}

TEST_P(StoreContractTest, ContentPutGetEveryField) {
  auto c = content();
  ASSERT_TRUE(c);
  ContentRecord full = record(1, "http://a/x", 1);
  ContentRecord sparse = record(1, "http://a/y", 2);
  sparse.browse.reset();
  sparse.mtime.reset();
  sparse.declared_mtime.reset();
  sparse.declared_size.reset();
  sparse.fetch.clear();
  ContentRecord unbrowsable = record(1, "http://a/z", 3);
  unbrowsable.browse = "";
  ContentBatch batch;
  batch.put(full);
  batch.put(sparse);
  batch.put(unbrowsable);
  ASSERT_TRUE(c->apply(batch).isOk());
  EXPECT_EQ(c->get(encodeUrlKey(full.key)).value(), full);
  EXPECT_EQ(c->get(encodeUrlKey(sparse.key)).value(), sparse);
  EXPECT_EQ(c->get(encodeUrlKey(unbrowsable.key)).value(), unbrowsable);
  EXPECT_EQ(c->get(encodeUrlKey({1, "http://a/x", "text/plain"})).value(), std::nullopt);
  EXPECT_EQ(c->count().value(), 3u);
  EXPECT_EQ(c->maxSeq().value(), 3u);
  EXPECT_TRUE(c->close().isOk());
}

// getMany(): several records in one call, in the order asked (tombstones too).
TEST_P(StoreContractTest, ContentGetManyAnswersInTheOrderAsked) {
  auto c = content();
  ASSERT_TRUE(c);
  ContentRecord x = record(1, "http://a/x", 1), gone = record(1, "http://a/g", 2);
  gone.deleted = true;
  ContentBatch batch;
  batch.put(x);
  batch.put(gone);
  ASSERT_TRUE(c->apply(batch).isOk());
  const std::string absent = encodeUrlKey({2, "http://a/x", "text/html"});
  auto got = c->getMany({encodeUrlKey(gone.key), absent, encodeUrlKey(x.key)});
  ASSERT_TRUE(got.isOk()) << got.status().toString();
  EXPECT_EQ(got.value(), (std::vector<std::optional<ContentRecord>>{c->get(encodeUrlKey(gone.key)).value(),
                                                                    std::nullopt, x}));
  ASSERT_TRUE(got.value()[0]);
  EXPECT_TRUE(got.value()[0]->deleted);
  EXPECT_TRUE(c->getMany({}).value().empty());
  EXPECT_TRUE(c->close().isOk());
}

TEST_P(StoreContractTest, ContentPutReplacesAndMovesTheSeq) {
  auto c = content();
  ASSERT_TRUE(c);
  ContentBatch batch;
  batch.put(record(1, "a", 1));
  batch.put(record(1, "b", 2));
  batch.put(record(1, "c", 3));
  ASSERT_TRUE(c->apply(batch).isOk());
  batch.clear();
  batch.put(record(1, "a", 4));
  ASSERT_TRUE(c->apply(batch).isOk());
  EXPECT_EQ(seqKeys(*c, 0), (std::vector<std::string>{"b@2", "c@3", "a@4"}));
  EXPECT_EQ(seqKeys(*c, 2), (std::vector<std::string>{"c@3", "a@4"}));
  EXPECT_EQ(seqKeys(*c, 4), std::vector<std::string>{});
  EXPECT_EQ(c->count().value(), 3u);
  EXPECT_EQ(c->get(encodeUrlKey(record(1, "a", 4).key)).value()->seq, 4u);
  EXPECT_TRUE(c->close().isOk());
}

TEST_P(StoreContractTest, ContentPutWithItsOwnSeqRefreshesInPlace) {
  auto c = content();
  ASSERT_TRUE(c);
  ContentBatch batch;
  batch.put(record(1, "a", 1));
  batch.put(record(1, "b", 2));
  ASSERT_TRUE(c->apply(batch).isOk());
  ContentRecord refreshed = record(1, "a", 1);
  refreshed.refreshed = fromUnixMillis(999'000);
  refreshed.declared_md5 = "ffffffffffffffffffffffffffffffff";
  refreshed.etag = "\"a 304 named a new one\"";  // a 304 with an ETag updates it in place
  batch.clear();
  batch.put(refreshed);
  ASSERT_TRUE(c->apply(batch).isOk()) << "a put with the seq the record already has is an in-place refresh";
  EXPECT_EQ(c->get(encodeUrlKey(refreshed.key)).value(), refreshed);
  EXPECT_EQ(seqKeys(*c, 0), (std::vector<std::string>{"a@1", "b@2"}));
  EXPECT_EQ(seqKeys(*c, 1), std::vector<std::string>{"b@2"}) << "a refresh is not a change for content users";
  EXPECT_EQ(c->maxSeq().value(), 2u);
  EXPECT_EQ(c->count().value(), 2u);
  batch.clear();
  batch.put(record(1, "c", 3));
  ASSERT_TRUE(c->apply(batch).isOk()) << "new seqs continue above the highest";
  batch.clear();
  batch.put(record(1, "c", 2));  // b holds 2: not an in-place refresh of c
  EXPECT_FALSE(c->apply(batch).isOk()) << "a seq going back is still refused";
  (void)c->close();  // the store may stay failed after a refused batch
}

TEST_P(StoreContractTest, ContentTombstonesAndErase) {
  auto c = content();
  ASSERT_TRUE(c);
  ContentBatch batch;
  batch.put(record(1, "a", 1));
  batch.put(record(1, "b", 2));
  ASSERT_TRUE(c->apply(batch).isOk());
  ContentRecord tomb = record(1, "a", 3);
  tomb.deleted = true;
  tomb.size = 0;
  tomb.md5.clear();
  tomb.filename.clear();
  batch.clear();
  batch.put(tomb);
  ASSERT_TRUE(c->apply(batch).isOk());
  tomb.created_seq = 1;  // the store keeps the removed record's
  EXPECT_EQ(c->get(encodeUrlKey(tomb.key)).value(), tomb);
  EXPECT_EQ(c->count().value(), 2u) << "tombstones count";
  EXPECT_EQ(seqKeys(*c, 0), std::vector<std::string>{"b@2"}) << "tombstones hidden by default";
  ContentFilter with_deleted;
  with_deleted.include_deleted = true;
  EXPECT_EQ(seqKeys(*c, 0, with_deleted), (std::vector<std::string>{"b@2", "a@3"}));
  auto prov = collect<ContentRecord>([&](auto fn) { return c->scanProvider(1, fn); });
  EXPECT_EQ(prov.size(), 2u) << "scanProvider includes tombstones";

  // Erase (tombstone purge) forgets the record; maxSeq stays.
  batch.clear();
  batch.erase(encodeUrlKey(tomb.key));
  batch.erase(encodeUrlKey({1, "never", "text/html"}));
  ASSERT_TRUE(c->apply(batch).isOk());
  EXPECT_EQ(c->get(encodeUrlKey(tomb.key)).value(), std::nullopt);
  EXPECT_EQ(c->count().value(), 1u);
  EXPECT_EQ(c->maxSeq().value(), 3u) << "maxSeq never goes backwards";
  EXPECT_EQ(seqKeys(*c, 0, with_deleted), std::vector<std::string>{"b@2"});
  EXPECT_TRUE(c->close().isOk());
}

TEST_P(StoreContractTest, ContentBatchOrderPutThenEraseSameKey) {
  auto c = content();
  ASSERT_TRUE(c);
  ContentBatch batch;
  batch.put(record(1, "a", 1));
  batch.erase(encodeUrlKey(record(1, "a", 1).key));
  batch.put(record(1, "b", 2));
  batch.putMeta("m", "1");
  batch.putMeta("m", "2");
  ASSERT_TRUE(c->apply(batch).isOk());
  EXPECT_EQ(c->get(encodeUrlKey(record(1, "a", 1).key)).value(), std::nullopt);
  EXPECT_EQ(c->count().value(), 1u);
  EXPECT_EQ(c->maxSeq().value(), 2u);
  EXPECT_EQ(c->getMeta("m").value(), std::optional<std::string>("2"));
  EXPECT_EQ(c->getMeta("other").value(), std::nullopt);
  EXPECT_TRUE(c->close().isOk());
}

TEST_P(StoreContractTest, ContentScanSinceFilters) {
  auto c = content();
  ASSERT_TRUE(c);
  ContentBatch batch;
  batch.put(record(1, "http://a/1.htm", 1, "text/html"));
  batch.put(record(2, "http://b/2.txt", 2, "text/plain"));
  batch.put(record(1, "http://a/sub/3.pdf", 3, "application/pdf"));
  batch.put(record(3, "http://c/4.htm", 4, "text/html"));
  ASSERT_TRUE(c->apply(batch).isOk());
  ContentFilter f;
  f.providers = {1, 3};
  EXPECT_EQ(seqKeys(*c, 0, f), (std::vector<std::string>{"http://a/1.htm@1", "http://a/sub/3.pdf@3", "http://c/4.htm@4"}));
  f = {};
  f.mime_patterns = {"text/*"};
  EXPECT_EQ(seqKeys(*c, 0, f), (std::vector<std::string>{"http://a/1.htm@1", "http://b/2.txt@2", "http://c/4.htm@4"}));
  f.providers = {1};  // kinds AND-ed
  EXPECT_EQ(seqKeys(*c, 0, f), std::vector<std::string>{"http://a/1.htm@1"});
  f = {};
  f.url_prefixes = {"http://a/sub/", "http://c/"};
  EXPECT_EQ(seqKeys(*c, 0, f), (std::vector<std::string>{"http://a/sub/3.pdf@3", "http://c/4.htm@4"}));
  f = {};
  f.stored_since = record(0, "", 3).stored;
  EXPECT_EQ(seqKeys(*c, 0, f), (std::vector<std::string>{"http://a/sub/3.pdf@3", "http://c/4.htm@4"}));
  f = {};
  f.mime_patterns = {"image/*"};
  EXPECT_TRUE(seqKeys(*c, 0, f).empty());
  int calls = 0;
  ASSERT_TRUE(c->scanSince(0, {}, [&](const ContentRecord&) { return ++calls < 2; }).isOk());
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(c->close().isOk());
}

TEST_P(StoreContractTest, ContentScanProviderInKeyOrderOnlyThatProvider) {
  auto c = content();
  ASSERT_TRUE(c);
  ContentBatch batch;
  ChangeSeq seq = 0;
  // Providers 1, 256 and 65536 differ only in other bytes: a wrong encoding mixes them.
  for (ProviderId pid : {256u, 1u, 65536u}) {
    for (auto [url, mime] : std::vector<std::pair<const char*, const char*>>{
             {"http://z/", "text/html"}, {"http://a/b", "text/html"}, {"http://a/", "text/html"},
             {"http://a/b", "text/plain"}}) {
      ++seq;
      batch.put(record(pid, url, seq, mime));
    }
  }
  ASSERT_TRUE(c->apply(batch).isOk());
  for (ProviderId pid : {1u, 256u, 65536u}) {
    auto rows = collect<ContentRecord>([&](auto fn) { return c->scanProvider(pid, fn); });
    ASSERT_EQ(rows.size(), 4u) << pid;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      EXPECT_EQ(rows[i].key.pid, pid);
      if (i > 0) {
        EXPECT_LT(encodeUrlKey(rows[i - 1].key), encodeUrlKey(rows[i].key)) << "key order";
      }
    }
  }
  EXPECT_TRUE(collect<ContentRecord>([&](auto fn) { return c->scanProvider(2, fn); }).empty());
  EXPECT_TRUE(c->close().isOk());
}

TEST_P(StoreContractTest, ContentManyRecordsScanCompletelyInOrder) {
  auto c = content();
  ASSERT_TRUE(c);
  constexpr int kN = 3000;
  ContentBatch batch;
  for (int i = 1; i <= kN; ++i) {
    batch.put(record(1 + i % 4, "http://h/" + std::to_string(i), static_cast<ChangeSeq>(i) * 2));
    if (batch.size() == 500) {
      ASSERT_TRUE(c->apply(batch).isOk());
      batch.clear();
    }
  }
  ASSERT_TRUE(c->apply(batch).isOk());
  EXPECT_EQ(c->count().value(), static_cast<std::uint64_t>(kN));
  EXPECT_EQ(c->maxSeq().value(), static_cast<ChangeSeq>(kN) * 2);
  EXPECT_EQ(seqKeys(*c, 0).size(), static_cast<std::size_t>(kN));
  EXPECT_EQ(seqKeys(*c, 4000).size(), static_cast<std::size_t>(kN - 2000));
  ContentFilter f;
  f.providers = {2};
  EXPECT_EQ(seqKeys(*c, 0, f).size(), static_cast<std::size_t>(kN / 4));
  EXPECT_EQ(collect<ContentRecord>([&](auto fn) { return c->scanProvider(3, fn); }).size(),
            static_cast<std::size_t>(kN / 4));
  EXPECT_TRUE(c->close().isOk());
}

TEST_P(StoreContractTest, ContentReadsRunConcurrentlyWithTheWriter) {
  auto c = content();
  ASSERT_TRUE(c);
  constexpr int kWrites = 1500;
  std::atomic<bool> done{false};
  std::atomic<int> bad{0};
  auto reader = [&] {
    while (!done.load()) {
      ChangeSeq last = 0;
      Status s = c->scanSince(0, {}, [&](const ContentRecord& r) {
        if (r.seq <= last || r.md5 != "md5-of-" + std::to_string(r.seq) || r.size != 4096 + r.seq) ++bad;
        last = r.seq;
        return true;
      });
      if (!s.isOk()) ++bad;
      auto g = c->get(encodeUrlKey(record(1, "k7", 0).key));
      if (!g.isOk() || (g.value() && g.value()->md5 != "md5-of-" + std::to_string(g.value()->seq))) ++bad;
      if (!c->maxSeq().isOk() || !c->count().isOk()) ++bad;
    }
  };
  std::thread r1(reader), r2(reader);
  for (int i = 1; i <= kWrites; ++i) {
    ContentBatch batch;
    batch.put(record(1, "k" + std::to_string(i % 50), static_cast<ChangeSeq>(i)));
    ASSERT_TRUE(c->apply(batch).isOk());
    if (i % 300 == 0) {
      ASSERT_TRUE(c->sync().isOk());
    }
  }
  done = true;
  r1.join();
  r2.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(c->count().value(), 50u);
  EXPECT_EQ(c->maxSeq().value(), static_cast<ChangeSeq>(kWrites));
  EXPECT_TRUE(c->close().isOk());
}

TEST_P(StoreContractTest, ContentCallsAfterCloseFail) {
  auto c = content();
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->close().isOk());
  ContentBatch batch;
  batch.put(record(1, "a", 1));
  EXPECT_FALSE(c->apply(batch).isOk());
  EXPECT_FALSE(c->get(encodeUrlKey(record(1, "a", 1).key)).isOk());
  EXPECT_FALSE(c->maxSeq().isOk());
}

TEST_P(StoreContractTest, ContentRestartKeepsWhatWasSynced) {
  auto c = content();
  ASSERT_TRUE(c);
  if (!c->openInfo().persistent) GTEST_SKIP() << GetParam() << " is not persistent";
  ContentBatch batch;
  batch.put(record(1, "a", 1));
  batch.put(record(1, "b", 5));
  batch.putMeta("epoch", "x");
  ASSERT_TRUE(c->apply(batch).isOk());
  batch.clear();
  batch.erase(encodeUrlKey(record(1, "b", 5).key));
  ASSERT_TRUE(c->apply(batch).isOk());
  ASSERT_TRUE(c->sync().isOk());
  ASSERT_TRUE(c->close().isOk());
  c.reset();
  c = content();
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->openInfo().created);
  EXPECT_TRUE(c->openInfo().clean_shutdown);
  EXPECT_FALSE(c->openInfo().may_have_lost_synced);
  EXPECT_EQ(c->get(encodeUrlKey(record(1, "a", 1).key)).value(), record(1, "a", 1));
  EXPECT_EQ(c->count().value(), 1u);
  EXPECT_EQ(c->maxSeq().value(), 5u) << "maxSeq survives a restart even when its record was erased";
  EXPECT_EQ(c->getMeta("epoch").value(), std::optional<std::string>("x"));
  EXPECT_EQ(seqKeys(*c, 0), std::vector<std::string>{"a@1"});
  EXPECT_TRUE(c->close().isOk());
}

INSTANTIATE_TEST_SUITE_P(Stores, StoreContractTest, ::testing::ValuesIn(storePlugins()), pluginTestName);

}  // namespace
}  // namespace lcc::contract
