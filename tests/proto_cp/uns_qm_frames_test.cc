// The UNS → QM link as compact frames (proto/uns_qm_frames.h): the same stream in both
// forms gives the decoder's handler the same calls; the switch is negotiated; a hostile
// frame is refused with a message, as the XML form refuses its element.
#include "proto/uns_qm_frames.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "lcc/support/time_util.h"
#include "proto/link_frames.h"
#include "proto/xml_reader.h"

namespace lcc::proto {
namespace {

UrlNotice url(std::string c, UrlOp op = UrlOp::kUpdate) {
  UrlNotice n;
  n.key = {17, std::move(c), "text/html"};
  n.op = op;
  return n;
}

UnsQmSet sampleSet(std::uint64_t id) {
  UnsQmSet s;
  s.header = {id, 17, SetKind::kFull, 3};
  UrlNotice a = url("http://www.server.com/index.htm");
  a.browse = "http://www.server.com/frameset.htm?index.htm";
  a.fetch = "http://www.server.com/index.htm?lococa&x=\"1\"";
  a.mtime = -1714564680;
  a.size = 5120;
  a.md5 = "0123456789abcdef0123456789abcdef";
  a.tod = "0-8,22-24";
  a.view_tag = "lang:en";
  UrlNotice b = url("http://www.server.com/old/page.htm", UrlOp::kDelete);
  b.browse = "";  // not browsable
  s.urls = {a, b, url("http://www.server.com/new.htm", UrlOp::kCheck)};
  return s;
}

// Every call the decoder makes, as text, in order.
struct Recorder : UnsStreamHandler {
  std::vector<std::string> calls;
  std::vector<UnsQmSet> sets;
  std::uint32_t offered = 0;
  void onUnsOpen(std::string_view n, std::uint32_t frames) override {
    offered = frames;
    calls.push_back("open " + std::string(n));
  }
  void onSetBegin(const UnsQmSetHeader& h) override {
    calls.push_back("begin " + std::to_string(h.id) + (h.streamed ? " streamed" : " count " + std::to_string(h.count)));
    UnsStreamHandler::onSetBegin(h);
  }
  void onSetUrl(UrlNotice&& u) override {
    calls.push_back("url " + u.key.url);
    UnsStreamHandler::onSetUrl(std::move(u));
  }
  void onSetEnd() override {
    calls.push_back("end");
    UnsStreamHandler::onSetEnd();
  }
  void onSetAbort() override {
    calls.push_back("abort");
    UnsStreamHandler::onSetAbort();
  }
  void onSet(UnsQmSet&& s) override { sets.push_back(std::move(s)); }
  void onPing() override { calls.push_back("ping"); }
  void onClose() override { calls.push_back("close"); }
};

// One stream, written twice: in XML, and in frames after the switch. A whole set, a
// streamed set aborted, a streamed set ended, a ping, the close.
struct Wire {
  std::string xml, framed;
};
Wire sampleStream() {
  Wire w;
  w.xml = encodeUnsOpen("m1/uns");
  w.framed = encodeUnsOpen("m1/uns", kFramesVersion) + encodeFramesSwitch();
  const UnsQmSet whole = sampleSet(41);
  w.xml += encodeSet(whole);
  appendSetBeginFrame(w.framed, whole.header);
  appendUrlsFrames(w.framed, whole.urls);
  appendSetEndFrame(w.framed, whole.urls.size());
  for (const bool abort : {true, false}) {
    UnsQmSetHeader h = sampleSet(abort ? 42 : 43).header;
    h.streamed = true;
    h.count = 0;
    appendSetBegin(w.xml, h);
    appendSetBeginFrame(w.framed, h);
    for (const auto& u : whole.urls) {
      appendUrl(w.xml, u);
      appendUrlsFrames(w.framed, {u});  // one URL per frame: parts as a session sends them
    }
    abort ? appendStreamedSetAbort(w.xml) : appendStreamedSetEnd(w.xml, whole.urls.size());
    abort ? appendSetAbortFrame(w.framed) : appendSetEndFrame(w.framed, whole.urls.size());
  }
  w.xml += encodePing() + encodeUnsClose();
  appendSignalFrame(w.framed, FrameType::kPing);
  appendSignalFrame(w.framed, FrameType::kEnd);
  return w;
}

Recorder decode(const std::string& wire, std::size_t chunk, bool frames = true, std::string* error = nullptr) {
  Recorder r;
  UnsStreamDecoder d(r, {}, frames);
  for (std::size_t at = 0; at < wire.size() && d.feed(wire.data() + at, std::min(chunk, wire.size() - at));) at += chunk;
  if (error) *error = d.failed() ? d.errorMessage() : "";
  return r;
}

TEST(UnsQmFrames, TheSameStreamInBothFormsGivesTheSameCallsWhateverTheChunking) {
  const Wire w = sampleStream();
  const Recorder want = decode(w.xml, w.xml.size(), false);
  ASSERT_EQ(want.sets.size(), 2u);
  EXPECT_EQ(want.sets[0], sampleSet(41));
  EXPECT_LT(w.framed.size(), w.xml.size()) << "frames are the compact form";
  for (std::size_t chunk : {std::size_t{1}, std::size_t{3}, std::size_t{64}, w.framed.size()}) {
    std::string error;
    const Recorder got = decode(w.framed, chunk, true, &error);
    EXPECT_EQ(error, "") << "chunk " << chunk;
    EXPECT_EQ(got.calls, want.calls) << "chunk " << chunk;
    EXPECT_EQ(got.sets, want.sets) << "chunk " << chunk;
    EXPECT_EQ(got.offered, kFramesVersion);
  }
}

TEST(UnsQmFrames, RandomSetsComeBackAsTheyWere) {
  std::mt19937_64 rng(28);
  // Any text XML could carry: ASCII with its specials, tab and newline, and two- and
  // four-byte UTF-8.
  static const std::vector<std::string> kPieces = {"a", "Z", "0", "&", "<", "\"", "'", " ", "\t", "\n", "%20",
                                                   "\xC3\xA9", "\xF0\x9F\x98\x80", "/"};
  auto text = [&](std::size_t max) {
    std::string s;
    for (std::size_t n = rng() % (max + 1); n > 0; --n) s += kPieces[rng() % kPieces.size()];
    return s;
  };
  for (int round = 0; round < 200; ++round) {
    UnsQmSet set;
    set.header = {1 + rng() % 1000, static_cast<ProviderId>(1 + rng() % 100000), rng() % 2 ? SetKind::kFull : SetKind::kPartial, 0};
    const std::size_t n = rng() % 40;
    for (std::size_t i = 0; i < n; ++i) {
      UrlNotice u = url("http://h/" + text(30), static_cast<UrlOp>(rng() % 3));
      u.key.pid = set.header.pid;
      u.key.mime = "m" + text(5);
      u.view_tag = text(4);
      if (rng() % 2) u.browse = text(10);
      u.fetch = text(10);
      if (rng() % 2) u.mtime = kMinRfc3339Seconds + static_cast<std::int64_t>(rng() % (kMaxRfc3339Seconds - kMinRfc3339Seconds + 1));
      if (rng() % 2) u.size = rng();
      if (rng() % 2) u.md5 = "0123456789abcdef0123456789abcdef";
      u.tod = text(6);
      set.urls.push_back(std::move(u));
    }
    set.header.count = n;
    std::string wire = encodeUnsOpen("r/uns", 1) + encodeFramesSwitch();
    appendSetBeginFrame(wire, set.header);
    appendUrlsFrames(wire, set.urls);
    appendSetEndFrame(wire, n);
    std::string error;
    const Recorder got = decode(wire, 1 + rng() % 50, true, &error);
    ASSERT_EQ(error, "");
    ASSERT_EQ(got.sets.size(), 1u);
    EXPECT_EQ(got.sets[0], set);
    auto as_xml = decodeSet(encodeSet(set));  // what one form carries, the other does
    ASSERT_TRUE(as_xml.isOk()) << as_xml.status().toString();
    EXPECT_EQ(*as_xml, set);
  }
}

TEST(UnsQmFrames, ALargeSetTravelsInBatchFrames) {
  std::vector<UrlNotice> urls;
  for (int i = 0; i < 10000; ++i) urls.push_back(url("http://www.server.com/" + std::to_string(i)));
  urls.push_back(url("http://www.server.com/long/" + std::string(6000, 'x')));  // a long one among them
  std::string wire;
  appendUrlsFrames(wire, urls);
  std::size_t frames = 0, sum = 0;
  FrameSplitter split(FrameLimits{});
  // A FieldReader keeps a reference to its limits: a named object, not a temporary that
  // ends with the statement (ASan: stack-use-after-scope in count()).
  const FrameLimits limits;
  split.feed(wire, [&](std::uint8_t type, std::string_view payload) {
    FieldReader r(payload, limits);
    const std::size_t n = r.count(10);
    EXPECT_EQ(type, static_cast<std::uint8_t>(FrameType::kUnsUrls));
    EXPECT_LE(n, 4096u);
    EXPECT_LE(payload.size(), 256u * 1024 + 6100) << "a batch ends past 256 KiB";
    ++frames;
    sum += n;
    return true;
  });
  EXPECT_FALSE(split.failed());
  EXPECT_EQ(sum, urls.size());
  EXPECT_GE(frames, 3u);
  EXPECT_LE(frames, 5u);
}

// What the XML reader refuses, the frame reader refuses: each with a message, and the
// stream ends there.
TEST(UnsQmFrames, HostileFramesAreRefusedWithAMessage) {
  const std::string head = encodeUnsOpen("m1/uns", 1) + encodeFramesSwitch();
  auto set = [](std::uint64_t count, bool streamed = false) {
    std::string out;
    appendSetBeginFrame(out, {1, 17, SetKind::kPartial, count, streamed});
    return out;
  };
  auto urls = [](std::vector<UrlNotice> us) {
    std::string out;
    appendUrlsFrames(out, us);
    return out;
  };
  auto end = [](std::uint64_t n) {
    std::string out;
    appendSetEndFrame(out, n);
    return out;
  };
  UrlNotice bad_md5 = url("http://a/1");
  bad_md5.md5 = "not an md5";
  UrlNotice far_mt = url("http://a/1");
  far_mt.mtime = kMaxRfc3339Seconds + 1;  // no RFC 3339 time names it: XML could not carry it
  std::string bad_op = urls({url("http://a/1")});
  bad_op[kFrameHeaderBytes + 1] = 3;  // after the count: the op of the first URL
  std::string huge = "\xC1\x21\xFF\xFF\xFF\x7F";
  struct Case {
    std::string name, bytes, why;
  };
  const std::vector<Case> cases = {
      {"urls outside a set", urls({url("http://a/1")}), "urls outside a set"},
      {"more urls than the count", set(1) + urls({url("http://a/1"), url("http://a/2")}), "more urls than its count"},
      {"an end short of the count", set(2) + urls({url("http://a/1")}) + end(1), "fewer urls than its count"},
      {"an end count that differs", set(0, true) + urls({url("http://a/1")}) + end(2), "differs from the urls sent"},
      {"a url without c", set(1) + urls({url("")}), "url without c"},
      {"an md5 that is not one", set(1) + urls({bad_md5}), "bad md5"},
      {"an mt past year 9999", set(1) + urls({far_mt}), "bad mt"},
      {"a control character", set(1) + urls({url("http://a/\x01")}), "XML cannot carry"},
      {"bad UTF-8", set(1) + urls({url("http://a/\xC3\x28")}), "XML cannot carry"},
      {"an op that does not exist", set(1) + bad_op, "an op that does not exist"},
      {"a set inside a set", set(1) + set(1), "a set begins inside a set"},
      {"an abort of a whole set", set(1) + [] { std::string a; appendSetAbortFrame(a); return a; }(), "abort"},
      {"a frame over the limit", huge, "bytes (the limit is"},
      {"not a frame", std::string("<set id=\"1\"/>"), "not a frame of version 1"},
      {"the close inside a set", set(1) + [] { std::string e; appendSignalFrame(e, FrameType::kEnd); return e; }(), "closed inside a set"},
  };
  for (const auto& c : cases) {
    std::string error;
    const Recorder got = decode(head + c.bytes, 5, true, &error);
    EXPECT_NE(error.find(c.why), std::string::npos) << c.name << ": " << error;
    EXPECT_TRUE(got.sets.empty()) << c.name;
  }
  // A set over max_set_urls is refused from its header.
  Recorder r;
  UnsStreamDecoder capped(r, UnsQmLimits{8192, 10}, true);
  EXPECT_FALSE(capped.feed(head + set(11)));
  EXPECT_NE(capped.errorMessage().find("larger than the limit"), std::string::npos);
}

TEST(UnsQmFrames, TheSwitchIsRefusedWhereFramesAreOffOrOfAnotherVersion) {
  std::string error;
  decode(encodeUnsOpen("m1/uns") + encodeFramesSwitch(), 64, false, &error);
  EXPECT_NE(error.find("did not offer them"), std::string::npos) << error;
  decode(encodeUnsOpen("m1/uns") + "<frames v=\"2\"/>", 64, true, &error);
  EXPECT_NE(error.find("version other than 1"), std::string::npos) << error;
  // Frames stay off without the switch: frame bytes are not XML.
  std::string frame;
  appendSignalFrame(frame, FrameType::kPing);
  decode(encodeUnsOpen("m1/uns", 1) + frame, 64, true, &error);
  EXPECT_NE(error, "");
}

TEST(UnsQmFrames, XmlCanCarryIsWhatTheEscaperAndExpatPassUnchanged) {
  EXPECT_TRUE(xmlCanCarry("plain http://a/b?c=d&e"));
  EXPECT_TRUE(xmlCanCarry("tab\tnewline\ncr\r"));
  EXPECT_TRUE(xmlCanCarry("\xC3\xA9t\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));  // é, €, an emoji
  for (const char* bad : {"\x01", "a\x1F", "\xC3", "\xC3\x28", "\xC0\xAF", "\xE0\x80\xAF", "\xED\xA0\x80",
                          "\xEF\xBF\xBE", "\xF4\x90\x80\x80", "\x80"}) {
    EXPECT_FALSE(xmlCanCarry(bad)) << bad;
  }
}

struct AckSide : QmStreamHandler {
  std::uint32_t offered = 0;
  std::vector<UnsQmAck> acks;
  int pings = 0;
  bool closed = false;
  void onQmOpen(std::uint32_t frames) override { offered = frames; }
  void onAck(const UnsQmAck& a) override { acks.push_back(a); }
  void onPing() override { ++pings; }
  void onClose() override { closed = true; }
};

TEST(UnsQmFrames, AcksComeBackAsTheXmlFormReadsThem) {
  std::string wire = encodeQmOpen(1) + encodeFramesSwitch();
  appendAckFrame(wire, {7, true, ErrorCode::kNone, ""});
  appendAckFrame(wire, {8, false, ErrorCode::kOffline, std::string(3000, 'r')});
  appendAckFrame(wire, {9, false, ErrorCode::kNone, "no code"});
  appendSignalFrame(wire, FrameType::kPing);
  appendSignalFrame(wire, FrameType::kEnd);
  AckSide side;
  QmStreamDecoder d(side, {}, true);
  for (char ch : wire) d.feed(&ch, 1);
  EXPECT_FALSE(d.failed()) << d.errorMessage();
  EXPECT_TRUE(d.closed());
  EXPECT_TRUE(side.closed);
  EXPECT_EQ(side.offered, 1u);
  EXPECT_EQ(side.pings, 1);
  ASSERT_EQ(side.acks.size(), 3u);
  EXPECT_EQ(side.acks[0], (UnsQmAck{7, true, ErrorCode::kNone, ""}));
  EXPECT_EQ(side.acks[1], (UnsQmAck{8, false, ErrorCode::kOffline, std::string(1024, 'r')})) << "a reason is cut at 1 KiB";
  EXPECT_EQ(side.acks[2].code, ErrorCode::kOffline) << "a refusal without a code reads as 130";
  // An ack without an id is refused.
  std::string bad = encodeQmOpen(1) + encodeFramesSwitch();
  appendAckFrame(bad, {0, true, ErrorCode::kNone, ""});
  AckSide other;
  QmStreamDecoder d2(other, {}, true);
  EXPECT_FALSE(d2.feed(bad));
  EXPECT_NE(d2.errorMessage().find("ack without a valid id"), std::string::npos);
}

}  // namespace
}  // namespace lcc::proto
