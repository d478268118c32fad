// The compact frames of the BOT-M link and the robot protocol (proto/link_frames.h,
// issue 28): the same messages as the XML form (decode(encode(m)) == asOnWire(m), in
// both forms, in any chunking), batches, the switch after the hellos, and hostile
// frames refused with a message before anything large is allocated.
#include <gtest/gtest.h>

#include <random>

#include "proto/botm_link.h"
#include "proto/link_frames.h"
#include "proto/robot.h"
#include "support/stream_reader.h"

namespace lcc::proto {
namespace {

using lcc::testing::feedAll;

FetchRequest fetch(std::uint64_t id) {
  FetchRequest f;
  f.id = id;
  f.url = "http://www.server.com/a.htm?x=" + std::to_string(id) + "&y=<2>";
  f.path = "/srv/content/00/00/" + std::to_string(id);
  f.expected_mime = "text/html";
  f.if_modified_since = id % 3 == 0 ? std::optional<std::int64_t>() : std::optional<std::int64_t>(1714564680 - id);
  f.if_none_match = id % 2 == 0 ? "\"e" + std::to_string(id) + "\"" : "";
  f.max_size = id * 1000;
  f.expected_md5 = "0123456789abcdef0123456789abcdef";
  f.redirects = static_cast<RedirectPolicy>(id % 3);
  f.redirect_prefixes = {"http://www.server.com/", "https://cdn.server.com/a/"};
  f.max_response_head = 16384;  // no wire carries it
  f.lease = Millis(id % 2 == 0 ? 30000 + id : 0);  // issue 27 §3: the fetch lease, both wires
  return f;
}

FetchResult result(std::uint64_t id) {
  FetchResult r;
  r.id = id;
  switch (id % 4) {
    case 0:
      r.http_status = 200;
      r.machine = "m1";
      r.filename = "00/00/" + std::to_string(id);
      r.mime = "text/html";
      r.size = 5120 + id;
      r.md5 = "0123456789abcdef0123456789abcdef";
      r.last_modified = 1714564680;
      r.etag = "\"e1\"";
      break;
    case 1:
      r.http_status = 304;
      r.unchanged = true;
      r.etag = "W/\"e2\"";
      break;
    case 2:
      r.code = ErrorCode::kServerError;
      r.http_status = 503;
      r.retry_after = Millis(120500);
      r.message = "service <unavailable> & busy";
      break;
    default:
      r.code = ErrorCode::kNotFound;
      r.http_status = 404;
      r.message = "not found";
      r.mime = "text/html";  // not carried on a failure
  }
  return r;
}

// The stream a side writes in `form`: its XML hello, the switch, then the messages.
template <typename Msg>
std::string stream(const std::string& hello, const std::vector<Msg>& ms, LinkForm form) {
  return hello + (form == LinkForm::kFrames ? encodeFramesSwitch() : "") + encodeMessages(ms, form);
}

template <typename Msg>
std::vector<Msg> onWire(std::vector<Msg> ms) {
  for (auto& m : ms) asOnWire(m);
  return ms;
}

class BothForms : public ::testing::TestWithParam<LinkForm> {};

TEST_P(BothForms, SourceToBotmCarriesWhatTheInProcessFormCarriesInAnyChunking) {
  std::vector<SourceMessage> ms = {fetch(1), fetch(2), fetch(3), LinkDelete{9, "m1", "00/00/2a"}, LinkPing{Millis(20000)},
                                   LinkSweep{4}, fetch(5), LinkPong{}, LinkEnd{}};
  const std::string bytes = stream(encodeSourceOpen({"qm", 1}), ms, GetParam());
  for (std::size_t chunk : {std::size_t{1}, std::size_t{7}, bytes.size()}) {
    SourceStreamDecoder dec;
    auto got = feedAll<SourceStreamDecoder, SourceMessage>(dec, bytes, chunk);
    ASSERT_EQ(got.size(), ms.size() + 1) << "chunk " << chunk;
    EXPECT_EQ(std::get<LinkSourceHello>(got[0]), (LinkSourceHello{"qm", 1}));
    got.erase(got.begin());
    EXPECT_EQ(got, onWire(ms)) << "chunk " << chunk;
    EXPECT_TRUE(dec.ended());
    EXPECT_EQ(dec.framed(), GetParam() == LinkForm::kFrames);
  }
}

TEST_P(BothForms, BotmToSourceCarriesWhatTheInProcessFormCarries) {
  std::vector<BotmMessage> ms;
  for (std::uint64_t i = 0; i < 12; ++i) ms.push_back(result(i));
  ms.insert(ms.begin() + 5, LinkDeleted{9, true, "dropped when ok"});
  ms.insert(ms.begin() + 6, LinkDeleted{10, false, "unknown-machine"});
  ms.push_back(LinkCapacity{64});
  ms.push_back(LinkMachines{{"m1", "m2"}, {{"m1", "http://10.0.0.1:7780"}}});
  ms.push_back(LinkFile{3, "m1", "00/00/7b", 5120});
  ms.push_back(LinkSwept{3, "m1", 1});
  ms.push_back(LinkPing{});
  ms.push_back(LinkEnd{});
  const std::string bytes = stream(encodeBotmOpen({"m1", 32, "http://10.0.0.1:7780", 1}), ms, GetParam());
  for (std::size_t chunk : {std::size_t{3}, bytes.size()}) {
    BotmStreamDecoder dec;
    auto got = feedAll<BotmStreamDecoder, BotmMessage>(dec, bytes, chunk);
    ASSERT_EQ(got.size(), ms.size() + 1);
    EXPECT_EQ(std::get<LinkBotmHello>(got[0]), (LinkBotmHello{"m1", 32, "http://10.0.0.1:7780", 1}));
    got.erase(got.begin());
    EXPECT_EQ(got, onWire(ms));
  }
}

TEST_P(BothForms, TheRobotProtocolBothWays) {
  std::vector<ToRobotMessage> down = {fetch(1), fetch(2), LinkPing{}, LinkPing{Millis(7)}, fetch(3), RobotEnd{}};
  BotmRobotStreamDecoder rd;
  auto got_down = feedAll<BotmRobotStreamDecoder, ToRobotMessage>(
      rd, stream(encodeBotmRobotOpen({"m1", 1}), down, GetParam()), 5);
  ASSERT_EQ(got_down.size(), down.size() + 1);
  EXPECT_EQ(std::get<RobotBotmHello>(got_down[0]), (RobotBotmHello{"m1", 1}));
  got_down.erase(got_down.begin());
  EXPECT_EQ(got_down, onWire(down));
  EXPECT_EQ(std::get<FetchRequest>(got_down[0]).path, "/srv/content/00/00/1") << "the robot's fetch has its file";
  EXPECT_EQ(std::get<FetchRequest>(got_down[1]).lease, Millis(30002)) << "the fetch lease reaches the robot";
  EXPECT_EQ(std::get<LinkPing>(got_down[3]).lease, Millis(7)) << "so does a renewal";

  std::vector<FromRobotMessage> up;
  for (std::uint64_t i = 0; i < 8; ++i) up.push_back(result(i));
  up.push_back(LinkPong{});
  up.push_back(RobotEnd{});
  RobotStreamDecoder bd;
  auto got_up =
      feedAll<RobotStreamDecoder, FromRobotMessage>(bd, stream(encodeRobotOpen({8, "host-1", 1}), up, GetParam()), 1);
  ASSERT_EQ(got_up.size(), up.size() + 1);
  EXPECT_EQ(std::get<RobotHello>(got_up[0]), (RobotHello{8, "host-1", 1}));
  got_up.erase(got_up.begin());
  EXPECT_EQ(got_up, onWire(up));
}

INSTANTIATE_TEST_SUITE_P(LinkForms, BothForms, ::testing::Values(LinkForm::kXml, LinkForm::kFrames),
                         [](const auto& info) { return info.param == LinkForm::kXml ? "Xml" : "Frames"; });

// Round-trip property over many random messages (a fixed seed: the same run each time).
TEST(Frames, RandomFetchesAndResultsRoundTrip) {
  std::mt19937_64 rng(28);
  auto text = [&](std::size_t max) {
    std::string s(rng() % max, 'a');
    for (auto& c : s) c = static_cast<char>(0x21 + rng() % 0x5E);
    return s;
  };
  for (int round = 0; round < 200; ++round) {
    std::vector<SourceMessage> src;
    std::vector<BotmMessage> up;
    for (int i = 0, n = static_cast<int>(rng() % 50); i < n; ++i) {
      FetchRequest f = fetch(rng());
      f.url = "http://" + text(300);
      f.expected_mime = text(40);
      f.if_modified_since = static_cast<std::int64_t>(rng());
      f.redirect_prefixes.assign(rng() % 5, "http://" + text(100));
      src.push_back(f);
      FetchResult r = result(rng());
      if (r.ok() && !r.unchanged) r.last_modified = -static_cast<std::int64_t>(rng() >> 1);
      if (!r.ok()) r.message = text(500);
      up.push_back(r);
    }
    SourceStreamDecoder sd;
    std::vector<SourceMessage> got_src;
    ASSERT_TRUE(sd.feed(encodeSourceOpen({"qm"}) + encodeFramesSwitch() + encodeMessages(src, LinkForm::kFrames), &got_src))
        << sd.errorMessage();
    got_src.erase(got_src.begin());
    EXPECT_EQ(got_src, onWire(src)) << "round " << round;
    BotmStreamDecoder bd;
    std::vector<BotmMessage> got_up;
    ASSERT_TRUE(bd.feed(encodeBotmOpen({"m1", 1, ""}) + encodeFramesSwitch() + encodeMessages(up, LinkForm::kFrames), &got_up))
        << bd.errorMessage();
    got_up.erase(got_up.begin());
    EXPECT_EQ(got_up, onWire(up)) << "round " << round;
  }
}

// Results travel in batches: one frame for a run of them, a new frame past the batch
// size, and the order kept.
TEST(Frames, ResultsTravelInBatchesInOrder) {
  std::vector<FetchResult> rs;
  for (std::uint64_t i = 0; i < 10000; ++i) rs.push_back(result(i * 4));  // stored ones
  std::string bytes;
  appendResults(bytes, rs, false, LinkForm::kFrames);
  std::size_t frames = 0;
  for (std::size_t at = 0; at < bytes.size();) {
    ASSERT_EQ(static_cast<unsigned char>(bytes[at]), kFrameMagic);
    EXPECT_EQ(bytes[at + 1], static_cast<char>(FrameType::kResults));
    std::size_t len = 0;
    for (int i = 0; i < 4; ++i) len |= static_cast<std::size_t>(static_cast<unsigned char>(bytes[at + 2 + i])) << (8 * i);
    EXPECT_LE(len, kBatchBytes + 16 * 1024);
    at += kFrameHeaderBytes + len;
    ++frames;
  }
  EXPECT_GE(frames, 3u) << "10,000 results are cut into batches of at most 4096";
  EXPECT_LE(frames, 8u) << "and not one frame each";
  RobotStreamDecoder dec;
  std::vector<FromRobotMessage> got;
  ASSERT_TRUE(dec.feed(encodeRobotOpen({8, "r"}) + encodeFramesSwitch() + bytes, &got)) << dec.errorMessage();
  ASSERT_EQ(got.size(), rs.size() + 1);
  for (std::size_t i = 0; i < rs.size(); ++i) EXPECT_EQ(std::get<FetchResult>(got[i + 1]).id, rs[i].id);
  std::string xml;
  appendResults(xml, rs, false, LinkForm::kXml);
  EXPECT_LT(bytes.size() * 2, xml.size()) << "the frames are less than half the XML";
}

TEST(Frames, HelloOffersAndAnswers) {
  EXPECT_EQ(agreedFrames(0, true), 0u) << "an old peer offers nothing";
  EXPECT_EQ(agreedFrames(1, false), 0u) << "node.link_frames: false answers XML";
  EXPECT_EQ(agreedFrames(1, true), 1u);
  EXPECT_EQ(agreedFrames(7, true), kFramesVersion) << "a newer peer gets the version we speak";
  // The XML hellos carry the offer only when there is one (an old peer's bytes stay).
  EXPECT_EQ(encodeRobotOpen({4, "r"}).find("frames"), std::string::npos);
  EXPECT_NE(encodeRobotOpen({4, "r", 1}).find("frames=\"1\""), std::string::npos);
  RobotStreamDecoder dec;
  std::vector<FromRobotMessage> got;
  ASSERT_TRUE(dec.feed(encodeRobotOpen({4, "r", 1}).substr(0, 200), &got));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(std::get<RobotHello>(got[0]).frames, 1u);
}

// ---- hostile frames -----------------------------------------------------------------
std::string header(std::uint8_t type, std::uint32_t len) {
  std::string h;
  h.push_back(static_cast<char>(kFrameMagic));
  h.push_back(static_cast<char>(type));
  for (int i = 0; i < 4; ++i) h.push_back(static_cast<char>((len >> (8 * i)) & 0xFF));
  return h;
}

// Feeds a BOT-M stream that switched to frames, then `tail`; returns the error.
std::string refusal(const std::string& tail, std::size_t chunk = 1000000) {
  BotmStreamDecoder dec;
  std::vector<BotmMessage> got;
  const std::string bytes = encodeBotmOpen({"m1", 1, ""}) + encodeFramesSwitch() + tail;
  for (std::size_t i = 0; i < bytes.size() && dec.feed(std::string_view(bytes).substr(i, chunk), &got); i += chunk) {
  }
  EXPECT_TRUE(dec.failed()) << "accepted: " << got.size() << " messages";
  EXPECT_EQ(dec.error(), ErrorCode::kMalformed);
  return dec.errorMessage();
}

TEST(Frames, HostileFramesAreRefusedWithAMessage) {
  EXPECT_NE(refusal("<result id=\"1\" ok=\"yes\"/>").find("not a frame of version 1"), std::string::npos);
  EXPECT_NE(refusal(header(0x11, 0x7FFFFFFF)).find("limit"), std::string::npos) << "refused from its header alone";
  EXPECT_NE(refusal(header(0x11, 0xFFFFFFFF).substr(0, 5), 1).find("limit"), std::string::npos)
      << "even a header cut short";
  // A batch that claims more records than the limit, or than its bytes could hold.
  EXPECT_NE(refusal(header(0x11, 3) + "\xff\xff\x03").find("batch of"), std::string::npos);
  EXPECT_NE(refusal(header(0x11, 3) + std::string("\xe8\x07\x00", 3)).find("cannot hold"), std::string::npos);
  // A string longer than the value limit, or than its frame.
  EXPECT_NE(refusal(header(0x13, 5) + std::string("\x01\x00\x80\x80\x04", 5)).find("limit is 8192"), std::string::npos);
  EXPECT_NE(refusal(header(0x13, 4) + std::string("\x01\x00\x10x", 4)).find("past the end"), std::string::npos);
  // A varint of more than 64 bits; a record cut off; a flag that is not 0 or 1.
  EXPECT_NE(refusal(header(0x14, 11) + std::string(10, '\xff') + "\x01").find("64 bits"), std::string::npos);
  EXPECT_NE(refusal(header(0x11, 7) + std::string("\x01\x07\x00\xc8\x01\x00\x05", 7)).find("past the end"),
            std::string::npos);
  EXPECT_NE(refusal(header(0x13, 3) + std::string("\x01\x05\x00", 3)).find("neither 0 nor 1"), std::string::npos);
  // A stored result without its file, an etag that is not one.
  FetchResult bad = result(0);
  bad.filename.clear();
  std::string no_file;
  appendResults(no_file, {bad}, true, LinkForm::kFrames);
  EXPECT_NE(refusal(no_file).find("machine and file"), std::string::npos);
}

TEST(Frames, AnUnknownFrameTypeIsSkippedAndTheSwitchNeedsItsVersion) {
  BotmStreamDecoder dec;
  std::vector<BotmMessage> got;
  std::string bytes = encodeBotmOpen({"m1", 1, ""}) + encodeFramesSwitch() + header(0x7E, 3) + "abc" +
                      encodeMessages(std::vector<BotmMessage>{LinkCapacity{5}}, LinkForm::kFrames);
  ASSERT_TRUE(dec.feed(bytes, &got)) << dec.errorMessage();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(std::get<LinkCapacity>(got[1]).slots, 5u);

  BotmStreamDecoder v2;
  EXPECT_FALSE(v2.feed(encodeBotmOpen({"m1", 1, ""}) + "<frames v=\"2\"/>", &got));
  EXPECT_NE(v2.errorMessage().find("version"), std::string::npos);
  BotmStreamDecoder xml_only(linkLimits(), /*frames=*/false);
  EXPECT_FALSE(xml_only.feed(encodeBotmOpen({"m1", 1, ""}) + encodeFramesSwitch(), &got));
  EXPECT_NE(xml_only.errorMessage().find("did not offer"), std::string::npos);
}

TEST(Frames, ElementsBeforeTheSwitchInTheSameChunkComeFirst) {
  // The BOT-M writes <machines> in XML, then switches when the source answered.
  std::string bytes = encodeBotmOpen({"m1", 1, "", 1}) + encodeMachines({{"m1"}, {}}) + encodeFramesSwitch() +
                      encodeMessages(std::vector<BotmMessage>{result(0), LinkEnd{}}, LinkForm::kFrames) +
                      "bytes after the end are ignored";
  BotmStreamDecoder dec;
  std::vector<BotmMessage> got;
  ASSERT_TRUE(dec.feed(bytes, &got)) << dec.errorMessage();
  ASSERT_EQ(got.size(), 4u);
  EXPECT_TRUE(std::holds_alternative<LinkMachines>(got[1]));
  EXPECT_TRUE(std::holds_alternative<FetchResult>(got[2]));
  EXPECT_TRUE(std::holds_alternative<LinkEnd>(got[3]));
  EXPECT_TRUE(dec.ended());
  EXPECT_TRUE(dec.feed("more", &got));
  EXPECT_EQ(got.size(), 4u);
}

}  // namespace
}  // namespace lcc::proto
