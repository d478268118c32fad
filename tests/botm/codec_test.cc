// The url source <-> BOT-M and robot protocol codecs: round trips, split feeds,
// hostile input.
#include <gtest/gtest.h>

#include "proto/botm_link.h"
#include "proto/robot.h"
#include "support/stream_reader.h"

namespace lcc::proto {
namespace {

using lcc::testing::feedAll;

// Results for the tests below.
FetchResult storedResult(std::uint64_t id, std::string machine = "", std::string filename = "") {
  FetchResult r;
  r.id = id;
  r.http_status = 200;
  r.machine = std::move(machine);
  r.filename = std::move(filename);
  r.mime = "text/html";
  r.size = 5120;
  r.md5 = "0123456789abcdef0123456789abcdef";
  r.last_modified = 1714564680;
  return r;
}
FetchResult failedResult(std::uint64_t id, ErrorCode code, int http, std::string message,
                         std::optional<Millis> retry_after = std::nullopt) {
  FetchResult r;
  r.id = id;
  r.code = code;
  r.http_status = http;
  r.message = std::move(message);
  r.retry_after = retry_after;
  return r;
}
FetchResult notModifiedResult(std::uint64_t id) {
  FetchResult r;
  r.id = id;
  r.http_status = 304;
  r.unchanged = true;
  return r;
}

// A request for the tests below: what a <fetch> carries on either protocol.
FetchRequest request(std::uint64_t id, std::string url, std::string mime, std::optional<std::int64_t> since,
                     std::uint64_t max_size, RedirectPolicy redirects = RedirectPolicy::kPrefix,
                     std::vector<std::string> prefixes = {}) {
  FetchRequest f;
  f.id = id;
  f.url = std::move(url);
  f.expected_mime = std::move(mime);
  f.if_modified_since = since;
  f.max_size = max_size;
  f.redirects = redirects;
  f.redirect_prefixes = std::move(prefixes);
  return f;
}

TEST(BotmLink, SourceToBotmRoundTripInAnyChunking) {
  FetchRequest f = request(123, "http://www.server.com/a.htm?x=1&y=<2>", "text/html", 1714564680, 52428800,
                           RedirectPolicy::kHost);
  f.expected_md5 = "0123456789abcdef0123456789abcdef";
  LinkDelete d{9, "m1", "00/00/2a"};
  std::string bytes = encodeSourceOpen({"qm"}) + encodeFetch(f) + encodeDelete(d) + encodeLinkPing() +
                      encodeSourceClose();
  for (std::size_t chunk : {std::size_t{1}, std::size_t{7}, bytes.size()}) {
    SourceStreamDecoder dec;
    auto msgs = feedAll<SourceStreamDecoder, SourceMessage>(dec, bytes, chunk);
    ASSERT_EQ(msgs.size(), 5u);
    EXPECT_EQ(std::get<LinkSourceHello>(msgs[0]).name, "qm");
    EXPECT_EQ(std::get<FetchRequest>(msgs[1]), f);
    EXPECT_EQ(std::get<LinkDelete>(msgs[2]), d);
    EXPECT_TRUE(std::holds_alternative<LinkPing>(msgs[3]));
    EXPECT_TRUE(std::holds_alternative<LinkEnd>(msgs[4]));
    EXPECT_TRUE(dec.ended());
  }
}

TEST(BotmLink, BotmToSourceRoundTrip) {
  FetchResult ok;
  ok.id = 123;
  ok.http_status = 200;
  ok.machine = "m1";
  ok.filename = "00/00/7b";
  ok.mime = "text/html";
  ok.size = 5120;
  ok.md5 = "0123456789abcdef0123456789abcdef";
  ok.last_modified = 1714564680;
  FetchResult bad;
  bad.id = 124;
  bad.code = ErrorCode::kServerError;
  bad.http_status = 503;
  bad.retry_after = std::chrono::seconds(120);
  bad.message = "service <unavailable>";
  FetchResult same;
  same.id = 125;
  same.http_status = 304;
  same.unchanged = true;
  std::string bytes = encodeBotmOpen({"m1", 32, ""}) + encodeResult(ok) + encodeResult(bad) + encodeResult(same) +
                      encodeDeleted({9, true, ""}) + encodeDeleted({10, false, "unknown-machine"}) +
                      encodeCapacity({64}) + encodeMachines({{"m1", "m2"}, {}}) + encodeBotmClose();
  BotmStreamDecoder dec;
  auto msgs = feedAll<BotmStreamDecoder, BotmMessage>(dec, bytes, 3);
  ASSERT_EQ(msgs.size(), 9u);
  EXPECT_EQ(std::get<LinkBotmHello>(msgs[0]), (LinkBotmHello{"m1", 32, ""}));
  EXPECT_EQ(std::get<FetchResult>(msgs[1]), ok);
  EXPECT_EQ(std::get<FetchResult>(msgs[2]), bad);
  EXPECT_EQ(std::get<FetchResult>(msgs[3]), same);
  EXPECT_EQ(std::get<LinkDeleted>(msgs[4]), (LinkDeleted{9, true, ""}));
  EXPECT_EQ(std::get<LinkDeleted>(msgs[5]).reason, "unknown-machine");
  EXPECT_EQ(std::get<LinkCapacity>(msgs[6]).slots, 64u);
  EXPECT_EQ(std::get<LinkMachines>(msgs[7]).ids, (std::vector<std::string>{"m1", "m2"}));
  EXPECT_TRUE(std::holds_alternative<LinkEnd>(msgs[8]));
}

TEST(BotmLink, ParsesTheDocumentedExampleWithAnotherPrefix) {
  std::string bytes =
      "<x:source xmlns:x=\"http://www.lococa.org/1.0/internal\" name=\"qm\">"
      "<fetch id=\"124\" url=\"http://www.server.com/gone.htm\" mime=\"text/html\" maxsize=\"52428800\" extra=\"1\"/>"
      "<unknown a=\"b\"><deeper/></unknown>"
      "<fetch id=\"125\" url=\"http://s/x\" since=\"1714564680\"/>";
  SourceStreamDecoder dec;
  std::vector<SourceMessage> out;
  ASSERT_TRUE(dec.feed(bytes, &out)) << dec.errorMessage();
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(std::get<FetchRequest>(out[1]).id, 124u);
  EXPECT_EQ(*std::get<FetchRequest>(out[2]).if_modified_since, 1714564680);
}

TEST(BotmLink, RefusesWrongRootMissingIdsAndDoctype) {
  {
    SourceStreamDecoder dec;
    std::vector<SourceMessage> out;
    EXPECT_FALSE(dec.feed("<lcc:botm xmlns:lcc=\"http://www.lococa.org/1.0/internal\" machine=\"m\">", &out));
    EXPECT_EQ(dec.error(), ErrorCode::kMalformed);
  }
  {
    SourceStreamDecoder dec;
    std::vector<SourceMessage> out;
    EXPECT_FALSE(dec.feed(encodeSourceOpen({"qm"}) + "<fetch url=\"http://a/\"/>", &out));
    EXPECT_EQ(dec.error(), ErrorCode::kMalformed);
    EXPECT_NE(dec.errorMessage().find("id"), std::string::npos);
  }
  {
    SourceStreamDecoder dec;
    std::vector<SourceMessage> out;
    EXPECT_FALSE(dec.feed(encodeSourceOpen({"qm"}) + "<fetch id=\"-1\" url=\"http://a/\"/>", &out));
  }
  {
    BotmStreamDecoder dec;
    std::vector<BotmMessage> out;
    EXPECT_FALSE(dec.feed("<!DOCTYPE x [<!ENTITY a \"b\">]><lcc:botm xmlns:lcc=\"http://www.lococa.org/1.0/internal\" machine=\"m\">", &out));
    EXPECT_EQ(dec.error(), ErrorCode::kMalformed);
  }
  {
    BotmStreamDecoder dec;
    std::vector<BotmMessage> out;
    std::string big(10000, 'a');
    EXPECT_FALSE(dec.feed(encodeBotmOpen({"m1", 1, ""}) + "<result id=\"1\" ok=\"no\" code=\"301\" http=\"" + big + "\"/>", &out));
    EXPECT_EQ(dec.error(), ErrorCode::kLimitExceeded);
  }
}

TEST(BotmLink, ManyMessagesOnOneStreamAreNotCapped) {
  BotmStreamDecoder dec;
  std::vector<BotmMessage> out;
  ASSERT_TRUE(dec.feed(encodeBotmOpen({"m1", 1, ""}), &out));
  std::string batch;
  for (int i = 0; i < 1000; ++i) batch += encodeCapacity({static_cast<std::uint64_t>(i)});
  for (int r = 0; r < 50; ++r) {
    out.clear();
    ASSERT_TRUE(dec.feed(batch, &out));
    ASSERT_EQ(out.size(), 1000u);
  }
}

// Content URLs (docs/internal-protocols.md §2): golden bytes, fed whole and byte by byte.
TEST(BotmLink, ContentUrlsInTheOpeningAndMachinesGolden) {
  LinkBotmHello hello{"m2", 32, "http://10.0.0.2:7780"};
  LinkMachines ms{{"m2", "m3"}, {{"m2", "http://10.0.0.2:7780"}, {"m3", "http://h3:80/lcc"}}};
  const std::string open = encodeBotmOpen(hello);
  const std::string machines = encodeMachines(ms);
  EXPECT_EQ(open,
            "<lcc:botm xmlns:lcc=\"http://www.lococa.org/1.0/internal\" machine=\"m2\" capacity=\"32\" "
            "content=\"http://10.0.0.2:7780\">\n");
  EXPECT_EQ(machines, "<machines ids=\"m2 m3\" content=\"m2=http://10.0.0.2:7780 m3=http://h3:80/lcc\"/>\n");
  const std::string bytes = open + machines + encodeBotmClose();
  for (std::size_t chunk : {bytes.size(), std::size_t{1}}) {
    BotmStreamDecoder dec;
    auto msgs = feedAll<BotmStreamDecoder, BotmMessage>(dec, bytes, chunk);
    ASSERT_EQ(msgs.size(), 3u) << "chunk " << chunk;
    EXPECT_EQ(std::get<LinkBotmHello>(msgs[0]), hello);
    EXPECT_EQ(std::get<LinkMachines>(msgs[1]), ms);
  }
}

TEST(BotmLink, ContentUrlsAreOptionalAndBadPairsAreIgnored) {
  // An older BOT-M: no content attributes at all; nothing is advertised.
  EXPECT_EQ(encodeBotmOpen({"m1", 4, ""}),
            "<lcc:botm xmlns:lcc=\"http://www.lococa.org/1.0/internal\" machine=\"m1\" capacity=\"4\">\n");
  EXPECT_EQ(encodeMachines({{"m1"}, {}}), "<machines ids=\"m1\"/>\n");
  const std::string bytes =
      "<lcc:botm xmlns:lcc=\"http://www.lococa.org/1.0/internal\" machine=\"m1\" capacity=\"4\">"
      "<machines ids=\"m1 m2\"/>"
      "<machines ids=\"m1 m2\" content=\" m1=http://a:1  junk =http://b:2 m2= m3=http://c:3\"/>";
  for (std::size_t chunk : {bytes.size(), std::size_t{1}}) {
    BotmStreamDecoder dec;
    auto msgs = feedAll<BotmStreamDecoder, BotmMessage>(dec, bytes, chunk);
    ASSERT_EQ(msgs.size(), 3u);
    EXPECT_EQ(std::get<LinkBotmHello>(msgs[0]).content_url, "");
    EXPECT_TRUE(std::get<LinkMachines>(msgs[1]).content_urls.empty());
    EXPECT_EQ(std::get<LinkMachines>(msgs[2]).content_urls,
              (std::map<std::string, std::string>{{"m1", "http://a:1"}, {"m3", "http://c:3"}}));
  }
}

TEST(BotmLink, TheOrphanSweepMessagesRoundTripAndNeedTheirAttributes) {
  SourceStreamDecoder sdec;
  auto smsgs = feedAll<SourceStreamDecoder, SourceMessage>(sdec, encodeSourceOpen({"qm"}) + encodeSweep({7}), 3);
  ASSERT_EQ(smsgs.size(), 2u);
  EXPECT_EQ(std::get<LinkSweep>(smsgs[1]), (LinkSweep{7}));
  const LinkFile f{7, "m1", "00/01/1a2", 123456};
  const LinkSwept w{7, "m1", 1};
  BotmStreamDecoder bdec;
  auto bmsgs = feedAll<BotmStreamDecoder, BotmMessage>(bdec, encodeBotmOpen({"m1", 2, ""}) + encodeFile(f) + encodeSwept(w), 5);
  ASSERT_EQ(bmsgs.size(), 3u);
  EXPECT_EQ(std::get<LinkFile>(bmsgs[1]), f);
  EXPECT_EQ(std::get<LinkSwept>(bmsgs[2]), w);
  BotmStreamDecoder bad;
  std::vector<BotmMessage> out;
  EXPECT_FALSE(bad.feed(encodeBotmOpen({"m1", 2, ""}) + "<file sweep=\"7\" machine=\"m1\" size=\"1\"/>\n", &out));
  EXPECT_EQ(bad.error(), ErrorCode::kMalformed);
}

// Found by botm_link_fuzz: http="20052428800" wrapped through an int cast into a negative
// status, which the encoder then wrote and the decoder refused (seed
// fuzz/corpus/botm_link/http-status-overflow.xml).
TEST(BotmLink, AnHttpStatusOver999IsRefusedNotWrapped) {
  BotmStreamDecoder dec;
  std::vector<BotmMessage> out;
  EXPECT_FALSE(dec.feed(encodeBotmOpen({"m1", 2, ""}) + "<result id=\"1\" ok=\"yes\" http=\"20052428800\"/>\n", &out));
  EXPECT_EQ(dec.error(), ErrorCode::kMalformed);
  EXPECT_NE(dec.errorMessage().find("http"), std::string::npos) << dec.errorMessage();
  BotmStreamDecoder fine;
  out.clear();
  EXPECT_TRUE(fine.feed(encodeBotmOpen({"m1", 2, ""}) + "<result id=\"1\" ok=\"yes\" machine=\"m1\" file=\"00/00/1\" http=\"999\"/>\n", &out))
      << fine.errorMessage();
}

TEST(RobotProtocol, RoundTripBothWays) {
  FetchRequest f = request(42, "http://www.server.com/a.htm", "text/html", 1714564680, 52428800, RedirectPolicy::kPrefix,
                           {"http://www.server.com/", "https://cdn.server.com/a/"});
  f.path = "/var/lib/lcc/content/00/00/2a";
  std::string down = encodeBotmRobotOpen({"m1"}) + encodeRobotFetch(f) + encodeBotmRobotClose();
  BotmRobotStreamDecoder rd;
  auto msgs = feedAll<BotmRobotStreamDecoder, ToRobotMessage>(rd, down, 5);
  ASSERT_EQ(msgs.size(), 3u);
  EXPECT_EQ(std::get<RobotBotmHello>(msgs[0]).machine, "m1");
  EXPECT_EQ(std::get<FetchRequest>(msgs[1]), f);
  EXPECT_TRUE(std::holds_alternative<RobotEnd>(msgs[2]));

  FetchResult ok = storedResult(42);
  FetchResult nf = failedResult(43, ErrorCode::kNotFound, 404, "not found");
  FetchResult same = notModifiedResult(44);
  std::string up = encodeRobotOpen({8, "host-1234"}) + encodeRobotResult(ok) + encodeRobotResult(nf) +
                   encodeRobotResult(same) + encodeRobotClose();
  RobotStreamDecoder bd;
  auto got = feedAll<RobotStreamDecoder, FromRobotMessage>(bd, up, 1);
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(std::get<RobotHello>(got[0]), (RobotHello{8, "host-1234"}));
  EXPECT_EQ(std::get<FetchResult>(got[1]), ok);
  EXPECT_EQ(std::get<FetchResult>(got[2]), nf);
  EXPECT_EQ(std::get<FetchResult>(got[3]), same);
}

// One record (lcc::FetchResult) on both protocols: the bytes are those the codecs wrote
// when each protocol had its own result struct (pinned from that build), whole and
// byte by byte. retry_after crosses as whole seconds, filename as "file".
TEST(FetchResultOnTheWire, ResultBytesAreUnchangedGolden) {
  FetchResult ok = storedResult(123, "m1", "00/00/7b");
  FetchResult bad = failedResult(124, ErrorCode::kServerError, 503, "service <unavailable>", std::chrono::seconds(120));
  FetchResult same = notModifiedResult(125);
  const std::string link = encodeResult(ok) + encodeResult(bad) + encodeResult(same);
  EXPECT_EQ(link,
            "<result id=\"123\" ok=\"yes\" http=\"200\" machine=\"m1\" file=\"00/00/7b\" mime=\"text/html\" "
            "sz=\"5120\" md5=\"0123456789abcdef0123456789abcdef\" mt=\"2024-05-01T11:58:00Z\"/>\n"
            "<result id=\"124\" ok=\"no\" code=\"303\" http=\"503\" retry_after=\"120\">service "
            "&lt;unavailable&gt;</result>\n"
            "<result id=\"125\" ok=\"yes\" http=\"304\" unchanged=\"yes\"/>\n");
  // The robot protocol has no machine or file; a Retry-After below a second is 0.
  FetchResult busy = failedResult(45, ErrorCode::kServerError, 429, "", Millis(30'999));
  ok.id = 42;
  const std::string robot = encodeRobotResult(ok) + encodeRobotResult(busy);
  EXPECT_EQ(robot,
            "<result id=\"42\" ok=\"yes\" http=\"200\" mime=\"text/html\" sz=\"5120\" "
            "md5=\"0123456789abcdef0123456789abcdef\" mt=\"2024-05-01T11:58:00Z\"/>\n"
            "<result id=\"45\" ok=\"no\" code=\"303\" http=\"429\" retry_after=\"30\"/>\n");
  ok.id = 123;
  const std::string stream = encodeBotmOpen({"m1", 1, ""}) + link;
  for (std::size_t chunk : {stream.size(), std::size_t{1}}) {
    BotmStreamDecoder dec;
    auto msgs = feedAll<BotmStreamDecoder, BotmMessage>(dec, stream, chunk);
    ASSERT_EQ(msgs.size(), 4u);
    EXPECT_EQ(std::get<FetchResult>(msgs[1]), ok);
    EXPECT_EQ(std::get<FetchResult>(msgs[2]).retry_after, Millis(120'000));
    EXPECT_EQ(std::get<FetchResult>(msgs[3]), same);
  }
}

// One request (lcc::FetchRequest) on both protocols: the bytes are those the codecs
// wrote when each hop had its own fetch struct (proto::LinkFetch, proto::RobotFetch;
// pinned from that build), whole and byte by byte. The link carries md5 and no file, the robot protocol
// a file and no md5; since is an RFC 3339 time; empty or zero fields are left out; the
// scope keeps the prefixes that fit in kMaxScopeBytes and skips one holding a space.
TEST(FetchRequestOnTheWire, FetchBytesAreUnchangedGolden) {
  FetchRequest full = request(123, "http://www.server.com/a.htm?x=1&y=<2>", "text/html", 1714564680, 52428800,
                              RedirectPolicy::kPrefix,
                              {"http://www.server.com/", "bad prefix/", "https://cdn.server.com/"});
  full.expected_md5 = "0123456789abcdef0123456789abcdef";
  full.max_response_head = 16384;  // the robot's own: no protocol carries it
  FetchRequest bare = request(124, "http://www.server.com/b.htm", "", std::nullopt, 0, RedirectPolicy::kNone);
  FetchRequest host = request(125, "http://www.server.com/c.htm", "text/plain", -1, 7, RedirectPolicy::kHost, {"http://x/"});
  host.path = "/not/on/the/link";
  const std::string link = encodeFetch(full) + encodeFetch(bare) + encodeFetch(host);
  EXPECT_EQ(link,
            "<fetch id=\"123\" url=\"http://www.server.com/a.htm?x=1&amp;y=&lt;2&gt;\" mime=\"text/html\" "
            "since=\"2024-05-01T11:58:00Z\" maxsize=\"52428800\" md5=\"0123456789abcdef0123456789abcdef\" "
            "scope=\"http://www.server.com/ https://cdn.server.com/\"/>\n"
            "<fetch id=\"124\" url=\"http://www.server.com/b.htm\" redirects=\"none\"/>\n"
            "<fetch id=\"125\" url=\"http://www.server.com/c.htm\" mime=\"text/plain\" "
            "since=\"1969-12-31T23:59:59Z\" maxsize=\"7\" redirects=\"host\" scope=\"http://x/\"/>\n");
  FetchRequest robot = full;  // md5 and the head limit stay off the robot protocol
  robot.id = 42;
  robot.path = "/var/lib/lcc/content/00/00/2a";
  FetchRequest robot_bare = bare;
  robot_bare.id = 43;
  robot_bare.path = "/c/00/00/2b";
  EXPECT_EQ(encodeRobotFetch(robot) + encodeRobotFetch(robot_bare),
            "<fetch id=\"42\" url=\"http://www.server.com/a.htm?x=1&amp;y=&lt;2&gt;\" "
            "file=\"/var/lib/lcc/content/00/00/2a\" mime=\"text/html\" since=\"2024-05-01T11:58:00Z\" "
            "maxsize=\"52428800\" scope=\"http://www.server.com/ https://cdn.server.com/\"/>\n"
            "<fetch id=\"43\" url=\"http://www.server.com/b.htm\" file=\"/c/00/00/2b\" redirects=\"none\"/>\n");
  // The scope stops at the first prefix that would pass kMaxScopeBytes.
  FetchRequest wide = request(126, "http://s/", "", std::nullopt, 0);
  for (int i = 0; i < 3; ++i) wide.redirect_prefixes.push_back("http://s/" + std::string(1500, char('a' + i)) + "/");
  const std::string wide_bytes = encodeFetch(wide);
  EXPECT_NE(wide_bytes.find(wide.redirect_prefixes[1]), std::string::npos);
  EXPECT_EQ(wide_bytes.find(wide.redirect_prefixes[2]), std::string::npos);
  // Each side reads only its protocol's attributes: a robot takes no md5, a BOT-M no file.
  const std::string robot_md5 = "<lcc:botm xmlns:lcc=\"http://www.lococa.org/1.0/robot\" machine=\"m1\">"
                                "<fetch id=\"1\" url=\"http://s/\" file=\"/c/1\" md5=\"0123456789abcdef0123456789abcdef\"/>";
  BotmRobotStreamDecoder rd;
  std::vector<ToRobotMessage> to_robot;
  ASSERT_TRUE(rd.feed(robot_md5, &to_robot)) << rd.errorMessage();
  ASSERT_EQ(to_robot.size(), 2u);
  EXPECT_EQ(std::get<FetchRequest>(to_robot[1]).path, "/c/1");
  EXPECT_EQ(std::get<FetchRequest>(to_robot[1]).expected_md5, "");
  const std::string link_file = encodeSourceOpen({"qm"}) + "<fetch id=\"1\" url=\"http://s/\" file=\"/c/1\" md5=\"ab\"/>";
  SourceStreamDecoder sd;
  std::vector<SourceMessage> to_botm;
  ASSERT_TRUE(sd.feed(link_file, &to_botm)) << sd.errorMessage();
  ASSERT_EQ(to_botm.size(), 2u);
  EXPECT_EQ(std::get<FetchRequest>(to_botm[1]).path, "");
  EXPECT_EQ(std::get<FetchRequest>(to_botm[1]).expected_md5, "ab");
}

// "ok=no" never reads as a success: without a code, or with code 0, it is 140.
TEST(FetchResultOnTheWire, AFailureWithoutACodeIsInternal) {
  const std::string bytes = encodeBotmOpen({"m1", 1, ""}) + "<result id=\"1\" ok=\"no\"/>\n" +
                            "<result id=\"2\" ok=\"no\" code=\"0\"/>\n";
  BotmStreamDecoder dec;
  auto msgs = feedAll<BotmStreamDecoder, BotmMessage>(dec, bytes, bytes.size());
  ASSERT_EQ(msgs.size(), 3u);
  EXPECT_EQ(std::get<FetchResult>(msgs[1]).code, ErrorCode::kInternal);
  EXPECT_EQ(std::get<FetchResult>(msgs[2]).code, ErrorCode::kInternal);
  RobotStreamDecoder rd;
  std::vector<FromRobotMessage> out;
  ASSERT_TRUE(rd.feed("<lcc:robot xmlns:lcc=\"http://www.lococa.org/1.0/robot\" slots=\"1\">"
                      "<result id=\"3\" ok=\"no\" code=\"0\"/>",
                      &out));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_FALSE(std::get<FetchResult>(out[1]).ok());
  EXPECT_EQ(std::get<FetchResult>(out[1]).code, ErrorCode::kInternal);
}

TEST(RobotProtocol, ParsesTheSpecExampleTypedByHand) {
  std::string hello = "<lcc:robot xmlns:lcc=\"http://www.lococa.org/1.0/robot\" slots=\"8\" name=\"host-1234\">\n";
  std::string res = "<result id=\"43\" ok=\"no\" code=\"301\" http=\"404\">not found</result>\n";
  RobotStreamDecoder d;
  std::vector<FromRobotMessage> out;
  ASSERT_TRUE(d.feed(hello + res, &out));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(std::get<FetchResult>(out[1]).code, ErrorCode::kNotFound);
  EXPECT_EQ(std::get<FetchResult>(out[1]).message, "not found");
}

TEST(RobotProtocol, RefusesZeroSlotsAndFetchWithoutFile) {
  RobotStreamDecoder d;
  std::vector<FromRobotMessage> out;
  EXPECT_FALSE(d.feed("<lcc:robot xmlns:lcc=\"http://www.lococa.org/1.0/robot\" slots=\"0\">", &out));
  BotmRobotStreamDecoder r;
  std::vector<ToRobotMessage> o2;
  EXPECT_FALSE(r.feed(encodeBotmRobotOpen({"m1"}) + "<fetch id=\"1\" url=\"http://a/\"/>", &o2));
  EXPECT_EQ(r.error(), ErrorCode::kMalformed);
}

// ETags (issue 29 §5): one optional attribute `etag` on <fetch> (if_none_match) and on an
// ok="yes" <result> (etag, also with unchanged), on both protocols, XML-escaped, read
// back equal; absent when empty (the golden bytes above). A value that is not an
// entity tag (lcc::isValidEtag) is a malformed stream.
TEST(EtagOnTheWire, CrossesBothProtocolsBothWays) {
  FetchResult ok = storedResult(123, "m1", "00/00/7b");
  ok.etag = "W/\"5e-<61a2>\"";
  FetchResult same = notModifiedResult(125);
  same.etag = "\"5e-61a2\"";
  EXPECT_EQ(encodeResult(same), "<result id=\"125\" ok=\"yes\" http=\"304\" unchanged=\"yes\" "
                                "etag=\"&quot;5e-61a2&quot;\"/>\n");
  FetchResult bad = failedResult(124, ErrorCode::kServerError, 503, "busy");
  bad.etag = "\"x\"";
  EXPECT_EQ(encodeResult(bad).find("etag"), std::string::npos) << "a failure carries no ETag";
  const std::string link = encodeBotmOpen({"m1", 1, ""}) + encodeResult(ok) + encodeResult(same);
  for (std::size_t chunk : {link.size(), std::size_t{1}}) {
    BotmStreamDecoder dec;
    auto msgs = feedAll<BotmStreamDecoder, BotmMessage>(dec, link, chunk);
    ASSERT_EQ(msgs.size(), 3u);
    EXPECT_EQ(std::get<FetchResult>(msgs[1]), ok);
    EXPECT_EQ(std::get<FetchResult>(msgs[2]), same);
  }
  RobotStreamDecoder rd;
  std::vector<FromRobotMessage> from_robot;
  ok.machine.clear();
  ok.filename.clear();
  ASSERT_TRUE(rd.feed("<lcc:robot xmlns:lcc=\"http://www.lococa.org/1.0/robot\" slots=\"1\">" +
                          encodeRobotResult(ok) + encodeRobotResult(same), &from_robot)) << rd.errorMessage();
  ASSERT_EQ(from_robot.size(), 3u);
  EXPECT_EQ(std::get<FetchResult>(from_robot[1]), ok);
  EXPECT_EQ(std::get<FetchResult>(from_robot[2]), same);

  FetchRequest f = request(7, "http://www.server.com/b.htm", "text/html", 1714564680, 0);
  f.if_none_match = "\"5e-61a2\"";
  EXPECT_NE(encodeFetch(f).find(" etag=\"&quot;5e-61a2&quot;\""), std::string::npos) << encodeFetch(f);
  SourceStreamDecoder sd;
  std::vector<SourceMessage> to_botm;
  ASSERT_TRUE(sd.feed(encodeSourceOpen({"qm"}) + encodeFetch(f), &to_botm)) << sd.errorMessage();
  ASSERT_EQ(to_botm.size(), 2u);
  EXPECT_EQ(std::get<FetchRequest>(to_botm[1]), f);
  f.path = "/c/00/00/07";
  BotmRobotStreamDecoder brd;
  std::vector<ToRobotMessage> to_robot;
  ASSERT_TRUE(brd.feed(encodeBotmRobotOpen({"m1"}) + encodeRobotFetch(f), &to_robot)) << brd.errorMessage();
  ASSERT_EQ(to_robot.size(), 2u);
  EXPECT_EQ(std::get<FetchRequest>(to_robot[1]), f);
}

TEST(EtagOnTheWire, AValueThatIsNotAnEntityTagIsMalformed) {
  const std::string bad[] = {"\"a&#10;b\"", "\"a&#13;\"", "\"a&#1;\"", "", "\"caf\xc3\xa9\"",
                             "\"" + std::string(kMaxEtagBytes, 'x') + "\""};
  for (const std::string& v : bad) {
    BotmStreamDecoder dec;
    std::vector<BotmMessage> out;
    EXPECT_FALSE(dec.feed(encodeBotmOpen({"m1", 1, ""}) + "<result id=\"1\" ok=\"yes\" unchanged=\"yes\" etag=\"" +
                              v + "\"/>\n", &out)) << v;
    EXPECT_EQ(dec.error(), ErrorCode::kMalformed) << v;
    BotmRobotStreamDecoder rd;
    std::vector<ToRobotMessage> to_robot;
    EXPECT_FALSE(rd.feed(encodeBotmRobotOpen({"m1"}) + "<fetch id=\"1\" url=\"http://a/\" file=\"/c/1\" etag=\"" + v +
                             "\"/>", &to_robot)) << v;
    EXPECT_EQ(rd.error(), ErrorCode::kMalformed) << v;
  }
}

}  // namespace
}  // namespace lcc::proto

namespace lcc::proto {
namespace {

// The in-process form hands records over without the codec (issue 28); asOnWire()
// shapes each as the decoder at the other end reads it, so a fetch or result carries
// the same facts either way: asOnWire(m) == decode(encode(m)).
template <typename Dec, typename Msg>
Msg throughTheWire(const std::string& opening, const Msg& m) {
  Dec dec;
  std::vector<Msg> got;
  EXPECT_TRUE(dec.feed(opening + encodeMessage(m), &got)) << dec.errorMessage();
  EXPECT_EQ(got.size(), 2u);
  return got.empty() ? Msg{} : got.back();
}

TEST(InProcessForm, AFetchCarriesWhatTheWireCarries) {
  std::vector<std::string> many;
  for (int i = 0; i < 400; ++i) many.push_back("http://p" + std::to_string(i) + ".test/some/longer/prefix/");
  many.insert(many.begin() + 3, "");
  many.insert(many.begin() + 5, "http://has space.test/");
  std::vector<FetchRequest> cases = {
      request(1, "http://p.test/a", "text/html", 1714564680, 5000, RedirectPolicy::kPrefix, {"http://p.test/"}),
      request(2, "http://p.test/b", "", std::nullopt, 0, RedirectPolicy::kNone),
      request(3, "http://p.test/c", "application/pdf", std::nullopt, 0, RedirectPolicy::kHost, many),
  };
  cases[0].path = "/srv/content/00/00/1";  // no link carries these two
  cases[0].max_response_head = 16384;
  cases[0].if_none_match = "\"v1\"";
  cases[1].expected_md5 = "0123456789abcdef0123456789abcdef";
  const std::string opening = encodeSourceOpen({"qm"});
  for (const auto& f : cases) {
    SourceMessage local = f;
    asOnWire(local);
    SourceMessage wire = throughTheWire<SourceStreamDecoder, SourceMessage>(opening, SourceMessage{f});
    EXPECT_EQ(std::get<FetchRequest>(local), std::get<FetchRequest>(wire)) << "fetch " << f.id;
  }
  SourceMessage cut = cases[2];
  asOnWire(cut);
  EXPECT_LT(std::get<FetchRequest>(cut).redirect_prefixes.size(), many.size() - 2) << "the scope is cut as on the wire";
}

TEST(InProcessForm, AResultCarriesWhatTheWireCarries) {
  std::vector<FetchResult> cases = {storedResult(1, "m1", "00/00/1"), notModifiedResult(2),
                                    failedResult(3, ErrorCode::kNotFound, 404, "gone"),
                                    failedResult(4, ErrorCode::kServerError, 503, "slow down", Millis(2500))};
  cases[0].etag = "\"e1\"";
  cases[0].response_head = "HTTP/1.1 200 OK\r\n\r\n";  // the robot keeps it; no link carries it
  cases[0].retry_after = Millis(1999);
  cases[1].etag = "W/\"e2\"";
  cases[1].machine = "m1";  // ignored on a 304
  cases[2].mime = "text/html";  // ignored on a failure
  cases[2].etag = "\"e3\"";
  const std::string opening = encodeBotmOpen({"m1", 4, ""});
  for (const auto& r : cases) {
    BotmMessage local = r;
    asOnWire(local);
    BotmMessage wire = throughTheWire<BotmStreamDecoder, BotmMessage>(opening, BotmMessage{r});
    EXPECT_EQ(std::get<FetchResult>(local), std::get<FetchResult>(wire)) << "result " << r.id;
  }
  BotmMessage deleted = LinkDeleted{9, true, "not carried when ok"};
  asOnWire(deleted);
  EXPECT_EQ(deleted, (throughTheWire<BotmStreamDecoder, BotmMessage>(
                         opening, BotmMessage{LinkDeleted{9, true, "not carried when ok"}})));
}

// The robot protocol's in-process form: the same facts as its wire (a fetch with its
// file and without md5, a result without machine and file).
TEST(InProcessForm, TheRobotProtocolCarriesWhatItsWireCarries) {
  FetchRequest f = request(5, "http://p.test/r", "text/html", 1714564680, 100, RedirectPolicy::kPrefix,
                           {"http://p.test/"});
  f.path = "/srv/content/00/00/5";
  f.expected_md5 = "0123456789abcdef0123456789abcdef";
  f.max_response_head = 16384;
  ToRobotMessage to = f;
  asOnWire(to);
  EXPECT_EQ(to, (throughTheWire<BotmRobotStreamDecoder, ToRobotMessage>(encodeBotmRobotOpen({"m1"}), ToRobotMessage{f})));
  EXPECT_EQ(std::get<FetchRequest>(to).path, f.path);
  for (FetchResult r : {storedResult(6, "m1", "00/00/6"), notModifiedResult(7),
                        failedResult(8, ErrorCode::kServerError, 503, "busy", Millis(1500))}) {
    FromRobotMessage from = r;
    asOnWire(from);
    EXPECT_EQ(from, (throughTheWire<RobotStreamDecoder, FromRobotMessage>(encodeRobotOpen({4, "r"}), FromRobotMessage{r})))
        << "result " << r.id;
  }
}

}  // namespace
}  // namespace lcc::proto
