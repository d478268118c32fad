// The CP session state machine without sockets: golden transcripts
// (tests/data/cp_uns/NAME.in → NAME.ref), fed whole and one byte at a time.
// LCC_REGEN_GOLDEN=1 rewrites the .ref files (then read them before committing).
#include "common/config/config.h"
#include "uns/session_policy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "proto/uns_qm.h"
#include "support/sim_clock.h"
#include "uns/uns_core.h"
#include "uns/uns_test_util.h"

namespace lcc::uns {
namespace {

using namespace lcc::uns::testing;

SessionConfig goldenSessionConfig() {
  SessionConfig c = SessionConfig::fromConfig(Config::defaults());
  c.xml.max_value_length = 8192;
  c.xml.max_depth = 8;
  c.max_set_urls = 25;
  c.xml.max_elements = c.max_set_urls + 16;
  c.max_url_length = 2048;
  c.slots = 24;
  c.accept_mime = {"text/*", "application/pdf"};
  return c;
}

CoreConfig goldenCoreConfig() {
  CoreConfig c = CoreConfig::fromConfig(Config::defaults());
  c.accept_mime = {"text/*", "application/pdf"};
  c.report_errors = 1;
  c.fullsets_per_period = 3;
  return c;
}

const SetOutcome kAccepted{true, ErrorCode::kNone, {}};

struct Transcript {
  std::string reply;
  std::optional<SetSubmission> forwarded;
  ErrorCode end = ErrorCode::kNone;
  std::vector<WrittenAction> written_actions;
};

// Runs one session over `input`, `chunk` bytes at a time; the forwarder answers `outcome`.
Transcript runSession(const std::string& input, std::size_t chunk, const SetOutcome& outcome, SessionConfig cfg,
                      ProviderStore* store, Clock* clock) {
  UnsCore core(goldenCoreConfig(), store, clock, [](ProviderId pid) { return pid == 1 ? 318u : 0u; });
  SessionPolicy p(cfg);
  Transcript t;
  std::string pending;
  auto pump = [&] {
    for (int guard = 0; guard < 100; ++guard) {
      bool progress = false;
      if (!pending.empty()) {
        std::size_t used = p.onData(pending.data(), pending.size());
        pending.erase(0, used);
        progress = used > 0;
      }
      t.reply += p.takeOutput();
      if (auto wa = p.takeWrittenAction()) t.written_actions.push_back(wa->second);
      if (auto req = p.takeAuthRequest()) {
        p.onAuthenticated(core.authenticate(*req, "127.0.0.1"));
        progress = true;
      }
      if (auto sub = p.takeSubmission()) {
        t.forwarded = std::move(*sub);
        p.onSetOutcome(outcome);
        progress = true;
      }
      t.reply += p.takeOutput();
      if (!progress) break;
    }
  };
  if (chunk == 0) chunk = input.size();
  for (std::size_t off = 0; off < input.size(); off += chunk) {
    pending.append(input, off, chunk);
    pump();
  }
  p.onEof();
  pump();
  t.end = p.endCode();
  EXPECT_TRUE(p.finished());
  return t;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string render(const Transcript& t) {
  std::string out = t.reply + "\n";
  if (t.forwarded) {
    proto::UnsQmSetHeader h{1, t.forwarded->pid, t.forwarded->kind, t.forwarded->count};
    std::string set;
    proto::appendSetBegin(set, h);
    for (const auto& u : t.forwarded->urls) proto::appendUrl(set, u);
    proto::appendSetEnd(set);
    out += "forwarded: " + set + "\n";
  }
  return out;
}

class GoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenTest, RepliesMatchTheReferenceWholeAndByteByByte) {
  const std::string dir = std::string(LCC_TEST_DATA) + "/cp_uns/";
  const std::string name = GetParam();
  const std::string input = readFile(dir + name + ".in");
  ASSERT_FALSE(input.empty());
  SetOutcome outcome{true, ErrorCode::kNone, {}};
  if (name == "qm_offline") outcome = SetOutcome{false, ErrorCode::kOffline, "system temporarily off-line, try again later"};
  lcc::testing::SimClock clock;
  std::string whole_text, bytes_text;
  {
    ProviderFixture fx(goldenProviders(clock.now()));
    whole_text = render(runSession(input, 0, outcome, goldenSessionConfig(), fx.store(), &clock));
  }
  {
    ProviderFixture fx(goldenProviders(clock.now()));
    bytes_text = render(runSession(input, 1, outcome, goldenSessionConfig(), fx.store(), &clock));
  }
  EXPECT_EQ(whole_text, bytes_text);
  // Every reply is well-formed, namespace-declared XML.
  auto replies = parseReplies(whole_text.substr(0, whole_text.find("\nforwarded: ")));
  EXPECT_FALSE(replies.empty());
  if (std::getenv("LCC_REGEN_GOLDEN")) {
    std::ofstream(dir + name + ".ref", std::ios::binary) << whole_text;
  }
  EXPECT_EQ(whole_text, readFile(dir + name + ".ref")) << "golden " << name;
}

std::vector<std::string> goldenNames() {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(std::string(LCC_TEST_DATA) + "/cp_uns")) {
    if (e.path().extension() == ".in") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

INSTANTIATE_TEST_SUITE_P(CpUns, GoldenTest, ::testing::ValuesIn(goldenNames()),
                         [](const auto& info) { return info.param; });

// --- behaviour the transcripts do not show -----------------------------------

class SessionTest : public ::testing::Test {
 protected:
  lcc::testing::SimClock clock_;
  ProviderFixture fx_{goldenProviders(clock_.now())};
};

TEST_F(SessionTest, InitCountsTheConnectionAndReportsThePreviousOne) {
  auto t1 = runSession(initXml(1), 0, kAccepted, goldenSessionConfig(), fx_.store(), &clock_);
  auto r1 = parseReplies(t1.reply);
  ASSERT_EQ(r1.size(), 1u);
  EXPECT_EQ(r1[0].init.seq, 42u);
  EXPECT_EQ(r1[0].init.last_ip, "10.0.0.9");
  clock_.advance(Millis(5000));
  auto t2 = runSession(initXml(1), 0, kAccepted, goldenSessionConfig(), fx_.store(), &clock_);
  auto r2 = parseReplies(t2.reply);
  ASSERT_EQ(r2.size(), 1u);
  EXPECT_EQ(r2[0].init.seq, 43u);
  EXPECT_EQ(r2[0].init.last_ip, "127.0.0.1");
  ASSERT_TRUE(r2[0].init.last_time.has_value());
  EXPECT_EQ(*r2[0].init.last_time, toUnixMillis(clock_.now() - Millis(5000)) / 1000);
  auto rec = fx_.store()->get(1).value();
  EXPECT_EQ(rec->conn_seq, 43u);
}

TEST_F(SessionTest, ReportedErrorsAreClearedOnlyAfterTheReplyIsWritten) {
  UnsCore core(goldenCoreConfig(), fx_.store(), &clock_, nullptr);
  auto t = runSession(initXml(1), 0, kAccepted, goldenSessionConfig(), fx_.store(), &clock_);
  auto r = parseReplies(t.reply);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].init.error_total, 2u);
  EXPECT_EQ(r[0].init_errors.size(), 1u);  // uns.report_errors = 1
  // Not written yet: still there.
  EXPECT_EQ(fx_.store()->get(1).value()->error_total, 2u);
  ASSERT_EQ(t.written_actions.size(), 1u);
  // A new error arrives between the reply and the clearing: it survives.
  FetchErrorEntry fresh;
  fresh.notice.key = {1, "http://www.server.com/new.htm", "text/html"};
  fresh.code = ErrorCode::kServerError;
  ASSERT_TRUE(fx_.store()->modify(1, [&](ProviderRecord& p) {
    p.errors.push_back(fresh);
    ++p.error_total;
    return Status::ok();
  }).isOk());
  ASSERT_TRUE(core.clearReportedErrors(t.written_actions[0]).isOk());
  auto rec = fx_.store()->get(1).value();
  EXPECT_EQ(rec->error_total, 1u);
  ASSERT_EQ(rec->errors.size(), 1u);
  EXPECT_EQ(rec->errors[0].notice.key.url, "http://www.server.com/new.htm");
}

TEST_F(SessionTest, AcceptedFullSetClearsWantedOrUsesTheAllowance) {
  UnsCore core(goldenCoreConfig(), fx_.store(), &clock_, nullptr);
  ASSERT_TRUE(core.setAccepted(3, SetKind::kFull, true).isOk());
  EXPECT_FALSE(fx_.store()->get(3).value()->fullset_wanted);
  ASSERT_TRUE(core.setAccepted(1, SetKind::kFull, false).isOk());
  EXPECT_EQ(fx_.store()->get(1).value()->fullsets_used, 2u);
  // Provider 3 now has no allowance and is no longer wanted: a full set gets 131.
  std::string in = initXml(3) + setXml({"https://three.net/a"}, true);
  auto t = runSession(in, 0, kAccepted, goldenSessionConfig(), fx_.store(), &clock_);
  EXPECT_EQ(t.end, ErrorCode::kFullSetNotAllowed);
  // A new period restores the allowance.
  clock_.advance(goldenCoreConfig().fullset_period);
  auto t2 = runSession(in, 0, kAccepted, goldenSessionConfig(), fx_.store(), &clock_);
  EXPECT_EQ(t2.end, ErrorCode::kNone);
  ASSERT_TRUE(t2.forwarded.has_value());
}

TEST_F(SessionTest, PerProviderConnectionCap) {
  CoreConfig cc = goldenCoreConfig();
  cc.max_connections_per_provider = 1;
  UnsCore core(cc, fx_.store(), &clock_, nullptr);
  AuthResult a = core.authenticate({"1", "s3cret"}, "127.0.0.1");
  EXPECT_EQ(a.code, ErrorCode::kNone);
  AuthResult b = core.authenticate({"1", "s3cret"}, "127.0.0.1");
  EXPECT_EQ(b.code, ErrorCode::kTooManyConnections);
  core.releaseProvider(1);
  EXPECT_EQ(core.authenticate({"1", "s3cret"}, "127.0.0.1").code, ErrorCode::kNone);
}

TEST_F(SessionTest, TimeoutsAnswer133InTheReplyThatFits) {
  SessionPolicy p(goldenSessionConfig());
  p.onTimeout(false);
  auto r = parseReplies(p.takeOutput());
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].kind, proto::CpReply::Kind::kInitRejected);
  EXPECT_EQ(r[0].code, ErrorCode::kTimeout);

  UnsCore core(goldenCoreConfig(), fx_.store(), &clock_, nullptr);
  SessionPolicy q(goldenSessionConfig());
  std::string in = initXml(1) + "<lococa:set xmlns:lococa=\"http://www.lococa.org/1.0\"><url c=\"http://www.server.com/a\" m=\"text/html\"/>";
  std::size_t used = q.onData(in.data(), in.size());
  q.onAuthenticated(core.authenticate(*q.takeAuthRequest(), "127.0.0.1"));
  q.onData(in.data() + used, in.size() - used);
  EXPECT_TRUE(q.waitingForCp());
  q.onTimeout(true);
  auto r2 = parseReplies(q.takeOutput());
  ASSERT_EQ(r2.size(), 2u);
  EXPECT_EQ(r2[1].kind, proto::CpReply::Kind::kSetResult);
  EXPECT_FALSE(r2[1].accepted);
  EXPECT_EQ(r2[1].code, ErrorCode::kTimeout);
  EXPECT_FALSE(q.takeSubmission().has_value());
}

TEST_F(SessionTest, LastWinsWithinASet) {
  std::string in = initXml(1) + proto::encodeSetBegin(false, "http://www.server.com/") +
                   proto::encodeUrlElement({{"c", "a.htm"}, {"m", "text/html"}, {"sz", "1"}}) +
                   proto::encodeUrlElement({{"c", "b.htm"}, {"m", "text/html"}}) +
                   proto::encodeUrlElement({{"c", "a.htm"}, {"m", "text/html"}, {"op", "delete"}}) +
                   proto::encodeUrlElement({{"c", "a.htm"}, {"m", "text/plain"}}) + proto::encodeSetEnd();
  auto t = runSession(in, 0, kAccepted, goldenSessionConfig(), fx_.store(), &clock_);
  ASSERT_TRUE(t.forwarded.has_value());
  EXPECT_EQ(t.forwarded->count, 4u);  // all of them, in order: the QM applies in order
  std::string set;
  proto::appendSetBegin(set, {1, 1, SetKind::kPartial, t.forwarded->count});
  for (const auto& u : t.forwarded->urls) proto::appendUrl(set, u);
  proto::appendSetEnd(set);
  auto decoded = proto::decodeSet(set);
  ASSERT_TRUE(decoded.isOk()) << decoded.status().toString();
  ASSERT_EQ(decoded->urls.size(), 4u);
  EXPECT_EQ(decoded->urls[0].key.url, "http://www.server.com/a.htm");
  EXPECT_EQ(decoded->urls[0].op, UrlOp::kUpdate);
  EXPECT_EQ(decoded->urls[1].key.url, "http://www.server.com/b.htm");
  EXPECT_EQ(decoded->urls[2].op, UrlOp::kDelete);  // applied after the update: it wins
  EXPECT_EQ(decoded->urls[3].key.mime, "text/plain");
  auto r = parseReplies(t.reply);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[1].received, 4u);  // every valid <url> is counted
}

// A provider whose stored bytes reached its byte quota (the QM counts real bytes and
// refuses fetches past it with 313): every update of a partial set gets 206, declared
// size or not; removals still go through (they free room).
TEST_F(SessionTest, AProviderOverItsByteQuotaGets206PerUpdate) {
  ASSERT_TRUE(fx_.store()->modify(1, [](ProviderRecord& p) {
    p.used_bytes = p.quota_bytes;
    return Status::ok();
  }).isOk());
  std::string in = initXml(1) + proto::encodeSetBegin(false, "http://www.server.com/") +
                   proto::encodeUrlElement({{"c", "a.htm"}, {"m", "text/html"}}) +
                   proto::encodeUrlElement({{"c", "b.htm"}, {"m", "text/html"}, {"sz", "10"}}) +
                   proto::encodeUrlElement({{"c", "c.htm"}, {"m", "text/html"}, {"op", "delete"}}) + proto::encodeSetEnd();
  auto t = runSession(in, 0, kAccepted, goldenSessionConfig(), fx_.store(), &clock_);
  auto r = parseReplies(t.reply);
  ASSERT_EQ(r.size(), 2u);
  ASSERT_EQ(r[1].set_errors.size(), 2u) << t.reply;
  for (const auto& e : r[1].set_errors) EXPECT_EQ(e.code, ErrorCode::kQuotaExceeded);
  EXPECT_EQ(r[1].received, 1u);  // the removal
}

// Issue 25: the files quota of a partial set is the QM's (it alone tells a new URL from
// a refreshed one): a provider at its files quota still sends refreshes and new URLs
// alike, and the QM refuses the new ones (206 in the error list of the next init).
TEST_F(SessionTest, AtItsFilesQuotaAPartialSetStillGoesToTheQm) {
  ASSERT_TRUE(fx_.store()->modify(1, [](ProviderRecord& p) {
    p.used_files = p.quota_files;
    return Status::ok();
  }).isOk());
  std::string in = initXml(1) + setXml({"http://www.server.com/known.htm", "http://www.server.com/other.htm"});
  auto t = runSession(in, 0, kAccepted, goldenSessionConfig(), fx_.store(), &clock_);
  ASSERT_TRUE(t.forwarded.has_value()) << t.reply;
  EXPECT_EQ(t.forwarded->count, 2u);
  auto r = parseReplies(t.reply);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_TRUE(r[1].set_errors.empty()) << t.reply;
  EXPECT_EQ(r[1].received, 2u);
}

// Issue 25, the set-size decision: uns.max_set_urls caps the sets of a provider without
// a files quota; a provider whose quota_files is larger may send a set that large, so
// a full set naming everything it may hold is never refused with 132.
TEST_F(SessionTest, TheSetSizeCapIsRaisedToTheProvidersFilesQuota) {
  SessionConfig cfg = goldenSessionConfig();
  cfg.max_set_urls = 5;
  EXPECT_EQ(maxSetUrls(cfg, 0), 5u);
  EXPECT_EQ(maxSetUrls(cfg, 3), 5u);
  EXPECT_EQ(maxSetUrls(cfg, 100), 100u);
  auto urls = [](const std::string& prefix, int n) {
    std::vector<std::string> out;
    for (int i = 0; i < n; ++i) out.push_back(prefix + "p" + std::to_string(i) + ".htm");
    return out;
  };
  // Provider 1: quota_files 100, so 8 (and 100) go; 101 do not.
  auto eight = runSession(initXml(1) + setXml(urls("http://www.server.com/", 8)), 0, kAccepted, cfg, fx_.store(), &clock_);
  EXPECT_EQ(eight.end, ErrorCode::kNone) << eight.reply;
  ASSERT_TRUE(eight.forwarded.has_value());
  EXPECT_EQ(eight.forwarded->count, 8u);
  cfg.xml.max_elements = 1000;
  auto hundred = runSession(initXml(1) + setXml(urls("http://www.server.com/", 100)), 0, kAccepted, cfg, fx_.store(), &clock_);
  EXPECT_EQ(hundred.end, ErrorCode::kNone);
  auto over = runSession(initXml(1) + setXml(urls("http://www.server.com/", 101)), 0, kAccepted, cfg, fx_.store(), &clock_);
  EXPECT_EQ(over.end, ErrorCode::kSetTooLarge);
  // Provider 4: no files quota, so uns.max_set_urls holds.
  auto capped = runSession(initXml(4) + setXml(urls("http://www.four.org/", 8)), 0, kAccepted, cfg, fx_.store(), &clock_);
  EXPECT_EQ(capped.end, ErrorCode::kSetTooLarge);
  EXPECT_FALSE(capped.forwarded.has_value());
  EXPECT_NE(capped.reply.find("more than 5 urls"), std::string::npos) << capped.reply;
}

// A streamed set whose bytes all wait at once (they came while the provider was being
// authenticated, up to 1 MiB in the UNS) still comes in parts of about
// stream_part_bytes: the decoder gets 16 KiB at a time and stops at a ready part.
TEST_F(SessionTest, AStreamedSetFedAllAtOnceComesInPartsOfAboutStreamPartBytes) {
  SessionConfig cfg = goldenSessionConfig();
  cfg.max_set_urls = 100000;
  cfg.xml.max_elements = cfg.max_set_urls + 16;
  cfg.stream_part_bytes = 2048;
  std::vector<std::string> urls;
  for (int i = 0; i < 5000; ++i) urls.push_back("http://www.server.com/p/" + std::to_string(i) + ".htm");
  const std::string in = initXml(1) + setXml(urls);
  UnsCore core(goldenCoreConfig(), fx_.store(), &clock_, [](ProviderId) { return 0u; });
  SessionPolicy p(cfg);
  std::size_t used = p.onData(in.data(), in.size());
  auto req = p.takeAuthRequest();
  ASSERT_TRUE(req.has_value());
  p.onAuthenticated(core.authenticate(*req, "127.0.0.1"));
  std::uint64_t count = 0, parts = 0;
  std::size_t largest = 0;
  for (int guard = 0; guard < 10000 && !p.takeSetEnd(); ++guard) {
    used += p.onData(in.data() + used, in.size() - used);
    (void)p.takeSetBegin();
    while (auto part = p.takePart()) {
      ++parts;
      count += part->count;
      std::string xml;  // the part as the TCP form sends it
      for (const auto& u : part->urls) proto::appendUrl(xml, u);
      largest = std::max(largest, xml.size());
    }
  }
  EXPECT_EQ(count, urls.size());
  EXPECT_GT(parts, 10u);
  EXPECT_LT(largest, 2048u + 64 * 1024) << "at most one 16 KiB slice of input past the part size";
}

}  // namespace
}  // namespace lcc::uns

namespace lcc::uns {
namespace {

TEST(SessionLimits, AnEndlessStartTagIsRefusedBeforeItIsBuffered) {
  SessionPolicy p(goldenSessionConfig());
  std::string head = "<lococa:init xmlns:lococa=\"http://www.lococa.org/1.0\"><provider id=\"1\" passwd=\"";
  p.onData(head.data(), head.size());
  // 8 KiB values, so the bound is ten of them plus 64 KiB: stop well before 1 MiB.
  const std::string chunk(4096, 'x');
  std::size_t fed = 0;
  while (!p.finished() && fed < (1u << 20)) {
    p.onData(chunk.data(), chunk.size());
    fed += chunk.size();
  }
  EXPECT_TRUE(p.finished());
  EXPECT_LT(fed, 200u * 1024);
  EXPECT_EQ(p.endCode(), ErrorCode::kLimitExceeded);
  auto r = parseReplies(p.takeOutput());
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].code, ErrorCode::kLimitExceeded);
}

}  // namespace
}  // namespace lcc::uns
