// The BOT-M with content in an object store that hangs (issue 31 §1): a stand-in store
// on 127.0.0.1 (HttpTestServer, no signature check) holds each DELETE and listing until
// the test lets it answer. Fetch hand-offs and results go on meanwhile (the dispatch
// strand makes no store call: core/botm/README.md, "Threads"), and a delete is answered
// once the store has answered it, or with an io-error after s3.timeout.
#include <sys/stat.h>

#include <atomic>

#include "botm_service_fixture.h"
#include "support/http_test_server.h"

namespace lcc {
namespace {

using testing::HttpTestRequest;
using testing::HttpTestResponse;
using testing::HttpTestServer;

class BotmObjectStoreTest : public BotmServiceTest {
 protected:
  BotmObjectStoreTest() {
    EXPECT_TRUE(store_.start().isOk());
    // DELETE: 204; a listing (GET of the bucket): one object; held while hold_ is set.
    store_.setDefault([this](const HttpTestRequest& req) {
      HttpTestResponse r;
      r.status = req.method == "DELETE" ? 204 : 200;
      if (req.method == "GET") {
        r.headers = {{"Content-Type", "application/xml"}};
        r.body = "<ListBucketResult><Contents><Key>m1/00/0f/f00</Key><Size>1234</Size></Contents>"
                 "<IsTruncated>false</IsTruncated></ListBucketResult>";
      }
      if (hold_) r.stall = HttpTestResponse::Stall::kBeforeHeaders;
      return r;
    });
    secret_ = tmp_.file("s3.secret");
    EXPECT_TRUE(posixEnv()->writeFileAtomic(secret_, "not-checked").isOk());
    ::chmod(secret_.c_str(), 0600);
  }
  ~BotmObjectStoreTest() override { store_.stop(); }

  // A leaf BOT-M whose content is in the stand-in store; `timeout`: s3.timeout.
  std::string yaml(const FakeSource& source, std::uint16_t robots, const std::string& timeout) const {
    return leafYaml("m1", source.address(), robots, "",
                    "s3:\n  endpoint: http://127.0.0.1:" + std::to_string(store_.port()) +
                        "\n  access_key: k\n  secret_key_file: " + secret_ + "\n  timeout: " + timeout + "\n");
  }
  // A leaf BOT-M on the stand-in store (`timeout`: s3.timeout), its url source, and a
  // robot with one slot, linked once the source session is up.
  struct Leaf {
    Leaf(BotmObjectStoreTest& t, const std::string& timeout)
        : robots(freePort()), node(t.clock_, t.yaml(source, robots, timeout)), fetcher(t.stub()) {
      EXPECT_TRUE(source.waitFor([](const auto& ms) { return FakeSource::count<proto::LinkBotmHello>(ms) == 1; }));
      robot = t.robot(node, *fetcher, robots, 1);
      EXPECT_TRUE(source.waitFor([](const auto& ms) {
        auto c = FakeSource::last<proto::LinkCapacity>(ms);
        return c && c->slots == 1;
      }));
    }
    ~Leaf() { robot->stop(); }
    FakeSource source;
    std::uint16_t robots;
    BotmNode node;
    PluginPtr<Fetcher> fetcher;
    std::shared_ptr<bot::RobotClient> robot;
  };
  // The store answers what it holds, and what comes next at once.
  void release() {
    hold_ = false;
    store_.releaseStalls();
  }
  // Sends fetch `id` and waits for its result: it must come while the store holds a call.
  void fetchGoesThrough(FakeSource& source, std::uint64_t id) {
    const std::size_t before = source.all<FetchResult>().size();
    source.send(proto::encodeFetch(
        linkFetch(id, "http://p.test/" + std::to_string(id) + "?stub_size=10", "text/html", std::nullopt)));
    ASSERT_TRUE(source.waitFor([&](const auto& ms) { return FakeSource::count<FetchResult>(ms) > before; }))
        << "fetch " << id << " got no result while the object store held a call";
    EXPECT_TRUE(source.all<FetchResult>().back().ok());
    EXPECT_EQ(store_.stalledNow(), 1u) << "the store still holds its call";
  }

  HttpTestServer store_;
  std::atomic<bool> hold_{true};
  std::string secret_;
};

TEST_F(BotmObjectStoreTest, FetchesGoOnWhileADeleteHangsAndTheDeleteIsAnsweredWhenTheStoreAnswers) {
  Leaf leaf(*this, "10m");
  FakeSource& source = leaf.source;
  source.send(proto::encodeDelete({1, "m1", "00/00/5"}));
  ASSERT_TRUE(eventually([&] { return store_.stalledNow() == 1; })) << "the DELETE reached the store";
  fetchGoesThrough(source, 10);
  fetchGoesThrough(source, 11);
  EXPECT_TRUE(source.all<proto::LinkDeleted>().empty()) << "no answer before the store's";
  EXPECT_EQ(leaf.node.gauge("lcc_botm_object_calls"), 1);

  release();
  ASSERT_TRUE(source.waitFor([](const auto& ms) { return FakeSource::count<proto::LinkDeleted>(ms) == 1; }));
  EXPECT_EQ(source.all<proto::LinkDeleted>().at(0), (proto::LinkDeleted{1, true, ""}));
  EXPECT_EQ(leaf.node.gauge("lcc_botm_object_calls"), 0);
  const auto reqs = store_.requests();
  ASSERT_FALSE(reqs.empty());
  EXPECT_EQ(reqs.at(0).method, "DELETE");
  EXPECT_EQ(reqs.at(0).path, "/lcc/m1/00/00/5");
}

TEST_F(BotmObjectStoreTest, FetchesGoOnWhileTheSweepsListingHangsAndTheSweepAnswersAsBefore) {
  Leaf leaf(*this, "10m");
  FakeSource& source = leaf.source;
  source.send(proto::encodeSweep({4}));
  ASSERT_TRUE(eventually([&] { return store_.stalledNow() == 1; })) << "the listing reached the store";
  fetchGoesThrough(source, 10);
  EXPECT_TRUE(source.all<proto::LinkSwept>().empty());

  release();
  ASSERT_TRUE(source.waitFor([](const auto& ms) { return FakeSource::count<proto::LinkSwept>(ms) == 1; }));
  EXPECT_EQ(source.all<proto::LinkFile>(), (std::vector<proto::LinkFile>{{4, "m1", "00/0f/f00", 1234}}));
  EXPECT_EQ(source.all<proto::LinkSwept>().at(0), (proto::LinkSwept{4, "m1", 1}));
}

// A store that never answers: the delete fails with s3.timeout and is answered as any
// failed delete (the QM retries it later); the BOT-M goes on handing out fetches.
TEST_F(BotmObjectStoreTest, ADeleteTheStoreNeverAnswersIsAnsweredAnErrorAfterTheTimeout) {
  Leaf leaf(*this, "300ms");
  FakeSource& source = leaf.source;
  source.send(proto::encodeDelete({1, "m1", "00/00/5"}));
  ASSERT_TRUE(source.waitFor([](const auto& ms) { return FakeSource::count<proto::LinkDeleted>(ms) == 1; }));
  const auto d = source.all<proto::LinkDeleted>().at(0);
  EXPECT_EQ(d.id, 1u);
  EXPECT_FALSE(d.ok);
  EXPECT_EQ(d.reason.rfind("io-error: s3: DELETE m1/00/00/5", 0), 0u) << d.reason;
}

// Stopping while the store holds a DELETE: the call is cancelled (not waited out for
// s3.timeout, ten minutes here) and the node stops; the delete stays unanswered, so the
// QM keeps it and sends it again on its next link.
TEST_F(BotmObjectStoreTest, StoppingWhileADeleteHangsCancelsItAndAnswersNothing) {
  FakeSource source;
  const std::uint16_t robots = freePort();
  {
    BotmNode node(clock_, yaml(source, robots, "10m"));
    ASSERT_TRUE(source.waitFor([](const auto& ms) { return FakeSource::count<proto::LinkBotmHello>(ms) == 1; }));
    source.send(proto::encodeDelete({1, "m1", "00/00/5"}));
    ASSERT_TRUE(eventually([&] { return store_.stalledNow() == 1; }));
  }
  ASSERT_TRUE(source.waitFor([](const auto& ms) { return FakeSource::count<proto::LinkEnd>(ms) == 1; }))
      << "the BOT-M closed its link";
  EXPECT_TRUE(source.all<proto::LinkDeleted>().empty());
}

}  // namespace
}  // namespace lcc
