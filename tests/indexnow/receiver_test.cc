// The IndexNow receiver (core/indexnow/receiver.h) with a real provider store
// (storage-memory through the loader), the key fetch and the forwarder replaced by
// recorders, and the simulated clock (issue 25):
//  - ownership is decided before anything is fetched: a ping for a site no active
//    provider covers never makes the LCC connect (the key is not fetched);
//  - a key file that cannot be verified gets one answer, whatever the fetch saw;
//  - each URL's guessed type is checked against accept_mime before any fetch: a
//    refused URL is named in the answer with 203 and never sent; none left is 422.
#include "indexnow/receiver.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/config/config.h"
#include "proto/uns_qm.h"
#include "support/sim_clock.h"
#include "uns/uns_test_util.h"

namespace lcc::indexnow {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::string kKey = "7e3f6e8bc6b743e2a5e6a4a4c2d1a0a5";
const std::string kSite = "http://site.example/";

ProviderRecord provider(ProviderId id, const std::string& prefix, ProviderState state = ProviderState::kActive) {
  ProviderRecord p;
  p.id = id;
  p.state = state;
  p.prefixes = {prefix};
  return p;
}

http::Request post(const std::vector<std::string>& urls, const std::string& key = kKey,
                   const std::string& location = "") {
  http::Request r;
  r.method = "POST";
  const std::string host = urls.front().substr(7, urls.front().find('/', 7) - 7);  // http://HOST/...
  r.body = "{\"host\": \"" + host + "\", \"key\": \"" + key + "\"" +
           (location.empty() ? "" : ", \"keyLocation\": \"" + location + "\"") + ", \"urlList\": [";
  for (std::size_t i = 0; i < urls.size(); ++i) r.body += (i ? ", \"" : "\"") + urls[i] + "\"";
  r.body += "]}";
  return r;
}

class ReceiverTest : public ::testing::Test {
 protected:
  ReceiverTest()
      : fixture_({provider(1, kSite + "docs/"), provider(2, kSite + "held/", ProviderState::kSuspended)}) {}

  Receiver& receiver(ReceiverOptions o = ReceiverOptions::fromConfig(Config::defaults())) {
    ReceiverDeps d;
    d.providers = fixture_.store();
    d.clock = &clock_;
    d.metrics = &metrics_;
    d.fetch_key = [this](const std::string& key_url, const std::string&) -> Result<std::string> {
      fetched_.push_back(key_url);
      return key_answer_;
    };
    d.submit = [this](ProviderId pid, std::uint64_t count, std::string xml) {
      auto set = proto::decodeSet("<set id=\"1\" pid=\"" + std::to_string(pid) + "\" kind=\"partial\" count=\"" +
                                  std::to_string(count) + "\">" + xml + "</set>");
      EXPECT_TRUE(set.isOk()) << set.status().toString() << "\n" << xml;
      if (set.isOk()) {
        for (const auto& n : set.value().urls) sent_.push_back(std::to_string(pid) + " " + n.key.url + " " + n.key.mime);
      }
      return Durable{true, ""};
    };
    receiver_ = std::make_unique<Receiver>(o, std::move(d));
    return *receiver_;
  }

  lcc::testing::SimClock clock_;
  Metrics metrics_;
  lcc::uns::testing::ProviderFixture fixture_;
  std::unique_ptr<Receiver> receiver_;
  Result<std::string> key_answer_ = std::string(kKey + "\n");
  std::vector<std::string> fetched_;  // key files asked for
  std::vector<std::string> sent_;     // "pid url mime" of every URL handed to the forwarder
};

TEST_F(ReceiverTest, ASiteNoActiveProviderCoversIsRefusedWithoutFetchingItsKey) {
  Receiver& r = receiver();
  // An address and port the attacker chose, and a path of its own: nothing connects there.
  auto uncovered = r.handle(post({"http://10.0.0.7:6379/x"}, kKey, "http://10.0.0.7:6379/probe.txt"));
  EXPECT_EQ(uncovered.status, 403);
  EXPECT_THAT(uncovered.body, HasSubstr("belongs to no provider"));
  auto held = r.handle(post({kSite + "held/page.html"}));
  EXPECT_EQ(held.status, 403);
  EXPECT_THAT(held.body, HasSubstr("not active"));
  auto mixed = r.handle(post({kSite + "docs/a.html", kSite + "other/b.html"}));
  EXPECT_EQ(mixed.status, 403) << "one URL under no provider refuses the request";
  EXPECT_TRUE(fetched_.empty()) << fetched_.front();
  EXPECT_TRUE(sent_.empty());
}

TEST_F(ReceiverTest, AKeyThatCannotBeVerifiedGetsOneAnswerWhateverTheFetchSaw) {
  Receiver& r = receiver();
  const std::string location = kSite + "docs/key.txt";
  const std::vector<Result<std::string>> seen = {
      Status::ioError("fetch code 306: Couldn't connect to server"),  // a closed port
      Status::ioError("fetch code 301, HTTP 404"),                    // no such file
      Status::ioError("fetch code 304: Timeout was reached"),         // a port that never answers
      std::string("someone-elses-key-42\n"),                          // another key
  };
  std::vector<std::string> bodies;
  for (std::size_t i = 0; i < seen.size(); ++i) {
    key_answer_ = seen[i];
    // Another key each time: a key found wrong is remembered per key and location.
    auto a = r.handle(post({kSite + "docs/a.html"}, kKey.substr(0, 30) + std::to_string(10 + i), location));
    EXPECT_EQ(a.status, 403);
    bodies.push_back(a.body);
  }
  EXPECT_EQ(fetched_.size(), seen.size());
  EXPECT_THAT(bodies, ::testing::Each(bodies.front()));
  EXPECT_EQ(bodies.front(), "the key could not be verified at " + location + "\n");
  EXPECT_TRUE(sent_.empty());
}

TEST_F(ReceiverTest, UrlsOfTypesNotAcceptedAreNamedWith203AndNeverSent) {
  ReceiverOptions o = ReceiverOptions::fromConfig(Config::defaults());
  o.accept_mime = {"text/*", "application/pdf", "application/xml"};
  Receiver& r = receiver(o);
  auto a = r.handle(post({kSite + "docs/page.html", kSite + "docs/img.png", kSite + "docs/tool.exe",
                          kSite + "docs/report.pdf", kSite + "docs/about"}));
  EXPECT_EQ(a.status, 202) << a.body;
  EXPECT_EQ(a.body, "accepted 3 of 5 URLs; refused 2:\n"
                    "203 " + kSite + "docs/img.png: mime type not accepted (image/png)\n"
                    "203 " + kSite + "docs/tool.exe: mime type not accepted (application/octet-stream)\n");
  EXPECT_THAT(sent_, ElementsAre("1 " + kSite + "docs/page.html text/html", "1 " + kSite + "docs/report.pdf application/pdf",
                                 "1 " + kSite + "docs/about text/html"));
  EXPECT_EQ(metrics_.counter("lcc_indexnow_urls_refused_total", "").value(), 2u);
  EXPECT_EQ(metrics_.counter("lcc_indexnow_urls_total", "").value(), 3u);
}

TEST_F(ReceiverTest, NoUrlLeftIs422AndTheKeyIsNotFetched) {
  ReceiverOptions o = ReceiverOptions::fromConfig(Config::defaults());
  o.max_listed_refusals = 2;
  Receiver& r = receiver(o);
  auto a = r.handle(post({kSite + "docs/a.png", kSite + "docs/b.gif", kSite + "docs/c.exe", kSite + "docs/d.zip"}));
  EXPECT_EQ(a.status, 422);
  EXPECT_EQ(a.body, "no URL accepted; refused 4:\n"
                    "203 " + kSite + "docs/a.png: mime type not accepted (image/png)\n"
                    "203 " + kSite + "docs/b.gif: mime type not accepted (image/gif)\n"
                    "and 2 more\n");
  EXPECT_TRUE(fetched_.empty());
  EXPECT_TRUE(sent_.empty());
}

TEST_F(ReceiverTest, AutoRegistrationObeysTheTypeListAndMakesNoProviderForNothing) {
  ReceiverOptions o = ReceiverOptions::fromConfig(Config::defaults());
  o.auto_register = true;
  Receiver& r = receiver(o);
  const std::string location = kSite + "blog/key.txt";
  auto none = r.handle(post({kSite + "blog/img.png", kSite + "blog/tool.exe"}, kKey, location));
  EXPECT_EQ(none.status, 422) << none.body;
  EXPECT_TRUE(fetched_.empty());
  auto some = r.handle(post({kSite + "blog/post.html", kSite + "blog/img.png"}, kKey, location));
  EXPECT_EQ(some.status, 202) << some.body;
  EXPECT_THAT(some.body, HasSubstr("203 " + kSite + "blog/img.png"));
  EXPECT_THAT(fetched_, ElementsAre(location));
  EXPECT_THAT(sent_, ElementsAre("3 " + kSite + "blog/post.html text/html")) << "to the provider made, 3";
  EXPECT_EQ(metrics_.counter("lcc_indexnow_providers_registered_total", "").value(), 1u);
}

TEST_F(ReceiverTest, AFolderThatOverlapsAnotherProviderIsRefusedBeforeTheKeyIsFetched) {
  ReceiverOptions o = ReceiverOptions::fromConfig(Config::defaults());
  o.auto_register = true;
  Receiver& r = receiver(o);
  // The whole host's key: its folder "/" overlaps provider 1's /docs/.
  auto a = r.handle(post({kSite + "other.html"}));
  EXPECT_EQ(a.status, 403);
  EXPECT_THAT(a.body, HasSubstr("overlapping prefix"));
  EXPECT_TRUE(fetched_.empty());
}

}  // namespace
}  // namespace lcc::indexnow
