// The QM engine on every storage plugin: fetching less (issue 29 §5). The ETag of a
// stored fetch is kept and goes back as If-None-Match; a 304 is "unchanged" and a 304
// naming a new ETag replaces the one kept. Providers on one host share
// qm.host_inflight, whatever their own qm.provider_inflight.
#include "qm_plugin_fixture.h"

namespace lcc::qm {
namespace {

using namespace lcc::qm::testing;

FetchResult withEtag(FetchResult r, std::string etag) {
  r.etag = std::move(etag);
  return r;
}

FetchResult notModified(std::uint64_t id, std::string etag = {}) {
  FetchResult r;
  r.id = id;
  r.http_status = 304;
  r.unchanged = true;
  r.etag = std::move(etag);
  return r;
}

TEST_P(QmTest, TheEtagIsKeptAndSentBackAsIfNoneMatch) {
  ASSERT_TRUE(start().isOk());
  qm_->linkUp(1, "m1", 4);
  submit(makeSet(1, {update(1, "http://a/1")}, 1));
  auto f = botm_.takeFetches();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].order.if_none_match, "") << "nothing stored yet";
  qm_->onResult(1, withEtag(okResult(f[0].order.id, "f1"), "\"v1\""));
  EXPECT_EQ(record(1, "http://a/1")->etag, "\"v1\"");
  const ChangeSeq seq = record(1, "http://a/1")->seq;

  // No mt, no size, no md5: the LCC asks the server, with the ETag it keeps.
  submit(makeSet(1, {update(1, "http://a/1")}, 2));
  f = botm_.takeFetches();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].order.if_none_match, "\"v1\"");
  EXPECT_FALSE(f[0].order.if_modified_since) << "no Last-Modified was kept";
  const auto unchanged_before = qm_->status()["unchanged"].get<std::uint64_t>();
  qm_->onResult(1, notModified(f[0].order.id));
  EXPECT_EQ(qm_->status()["unchanged"].get<std::uint64_t>(), unchanged_before + 1) << "a 304 counts as unchanged";
  auto r = record(1, "http://a/1");
  EXPECT_EQ(r->filename, "f1") << "a 304 keeps the stored file";
  EXPECT_EQ(r->seq, seq) << "and is no change for content users";
  EXPECT_EQ(r->etag, "\"v1\"") << "a 304 without an ETag keeps the one kept";

  // A 304 naming another ETag (RFC 9110 §15.4.5) replaces it.
  submit(makeSet(1, {update(1, "http://a/1")}, 3));
  f = botm_.takeFetches();
  ASSERT_EQ(f.size(), 1u);
  qm_->onResult(1, notModified(f[0].order.id, "W/\"v1-gzip\""));
  EXPECT_EQ(record(1, "http://a/1")->etag, "W/\"v1-gzip\"");

  // The CP says the bytes changed: unconditional, no ETag sent.
  UrlNotice changed = update(1, "http://a/1");
  changed.size = 7;
  submit(makeSet(1, {changed}, 4));
  f = botm_.takeFetches();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].order.if_none_match, "");
  // A 200 without an ETag: none is kept any more.
  qm_->onResult(1, okResult(f[0].order.id, "f2", 7));
  EXPECT_EQ(record(1, "http://a/1")->etag, "");
  submit(makeSet(1, {update(1, "http://a/1")}, 5));
  f = botm_.takeFetches();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].order.if_none_match, "");
}

// Two providers whose URLs are on one host, each allowed 4 fetches at once, a BOT-M
// with room for 32: one fetch at a time on the host (qm.host_inflight 1), all of them
// fetched in the end. Another host is not held back.
TEST_P(QmTest, ProvidersOnOneHostShareItsHostInflight) {
  options_.provider_inflight = 4;
  options_.host_inflight = 1;
  ASSERT_TRUE(start().isOk());
  for (ProviderId p = 1; p <= 2; ++p) {
    std::vector<UrlNotice> urls;
    for (int i = 0; i < 3; ++i) urls.push_back(update(p, "http://shared.example/p" + std::to_string(p) + "/" + std::to_string(i)));
    submit(makeSet(p, urls, p));
  }
  submit(makeSet(3, {update(3, "http://other.example:8080/a"), update(3, "http://other.example:8080/b")}, 3));
  qm_->linkUp(1, "m1", 32);
  std::size_t shared_fetched = 0;
  std::size_t other_fetched = 0;
  for (int round = 0; round < 20 && shared_fetched < 6; ++round) {
    auto f = botm_.takeFetches();
    std::size_t shared_out = 0;
    for (const auto& x : f) {
      if (x.order.url.rfind("http://shared.example/", 0) == 0) ++shared_out;
    }
    ASSERT_EQ(shared_out, 1u) << "round " << round << ": fetches at once on the shared host";
    if (round == 0) EXPECT_EQ(f.size(), 2u) << "the other host's provider is not held back";
    for (const auto& x : f) {
      (x.order.url.rfind("http://shared.example/", 0) == 0 ? shared_fetched : other_fetched) += 1;
      qm_->onResult(x.link, okResult(x.order.id, "file-" + std::to_string(++files_)));
    }
  }
  EXPECT_EQ(shared_fetched, 6u);
  EXPECT_EQ(other_fetched, 2u);
  EXPECT_EQ(qm_->queued(), 0u);
  EXPECT_EQ(qm_->scheduler().hostCount(), 0u);
}

// A link that goes down frees the hosts of the fetches it held (once their fetch lease
// ran out: queue_manager_lease.cc).
TEST_P(QmTest, ALinkGoingDownFreesItsHosts) {
  options_.host_inflight = 1;
  ASSERT_TRUE(start().isOk());
  submit(makeSet(1, {update(1, "http://shared.example/1")}, 1));
  submit(makeSet(2, {update(2, "http://shared.example/2")}, 2));
  qm_->linkUp(1, "m1", 8);
  ASSERT_EQ(botm_.takeFetches().size(), 1u);
  qm_->linkDown(1);
  qm_->linkUp(2, "m1", 8);
  EXPECT_TRUE(botm_.takeFetches().empty()) << "the lost fetch's lease has not run out";
  clock_.advance(options_.fetch_lease + FetchLease::kMargin);
  auto f = botm_.takeFetches();
  ASSERT_EQ(f.size(), 1u) << "the host has room again, and still one at a time";
  qm_->onResult(2, okResult(f[0].order.id, "f1"));
  f = botm_.takeFetches();
  ASSERT_EQ(f.size(), 1u);
  qm_->onResult(2, okResult(f[0].order.id, "f2"));
  EXPECT_EQ(qm_->queued(), 0u);
}

}  // namespace
}  // namespace lcc::qm
