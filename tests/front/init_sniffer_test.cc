// What the front end reads of a CP before it relays: the init and nothing more, within
// a byte bound; hostile or out-of-order input gets the protocol's code.
#include <gtest/gtest.h>

#include "front/init_sniffer.h"
#include "proto/cp_uns.h"

namespace lcc::front {
namespace {

TEST(InitSniffer, TheInitGivesIdAndPasswordAndTheRestIsKeptAsSent) {
  InitSniffer s(16384);
  const std::string set = proto::encodeSetBegin(false, "http://x.org/");
  const std::string all = proto::encodeInit("17", "pw&<") + set;
  EXPECT_EQ(s.feed(all), InitSniffer::State::kInit);
  EXPECT_EQ(s.id(), 17u);
  EXPECT_EQ(s.password(), "pw&<");
  // Everything after the init's end tag, byte for byte (its newline included).
  const std::string end = "</lococa:init>";
  EXPECT_EQ(s.rest(), all.substr(all.find(end) + end.size()));
  EXPECT_NE(s.rest().find(set), std::string::npos);
}

TEST(InitSniffer, AnInitInSmallPiecesIsFound) {
  InitSniffer s(16384);
  const std::string all = proto::encodeInit("5", "secret");
  InitSniffer::State st = InitSniffer::State::kNeedMore;
  for (char c : all) st = s.feed(std::string_view(&c, 1));
  EXPECT_EQ(st, InitSniffer::State::kInit);
  EXPECT_EQ(s.id(), 5u);
}

TEST(InitSniffer, ASetFirstIsMalformed) {
  InitSniffer s(16384);
  EXPECT_EQ(s.feed(proto::encodeSetBegin(true, "")), InitSniffer::State::kRefused);
  EXPECT_EQ(s.code(), ErrorCode::kMalformed);
}

TEST(InitSniffer, GarbageIsMalformed) {
  InitSniffer s(16384);
  EXPECT_EQ(s.feed("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), InitSniffer::State::kRefused);
  EXPECT_EQ(s.code(), ErrorCode::kMalformed);
}

TEST(InitSniffer, AnInitPastTheBoundIsRefusedWithoutReadingFurther) {
  InitSniffer s(1024);
  std::string huge = "<lococa:init xmlns:lococa=\"http://www.lococa.org/1.0\"><provider id=\"1\" passwd=\"";
  huge += std::string(4096, 'a');
  EXPECT_EQ(s.feed(huge), InitSniffer::State::kRefused);
  EXPECT_EQ(s.code(), ErrorCode::kLimitExceeded);
}

TEST(InitSniffer, AnEndlessStreamOfElementsStopsAtTheBound) {
  InitSniffer s(2048);
  s.feed("<lococa:init xmlns:lococa=\"http://www.lococa.org/1.0\">");
  InitSniffer::State st = InitSniffer::State::kNeedMore;
  for (int i = 0; i < 1000 && st == InitSniffer::State::kNeedMore; ++i) st = s.feed("<x/>");
  EXPECT_EQ(st, InitSniffer::State::kRefused);
}

TEST(InitSniffer, AnIdThatIsNoProviderNumberIsAuthFailed) {
  for (const char* id : {"0", "abc", "4294967296", ""}) {
    InitSniffer s(16384);
    EXPECT_EQ(s.feed(proto::encodeInit(id, "pw")), InitSniffer::State::kRefused) << id;
    EXPECT_EQ(s.code(), ErrorCode::kAuthFailed) << id;
  }
}

TEST(InitSniffer, ClosingBeforeTheInitEndsIsMalformed) {
  InitSniffer s(16384);
  s.feed("<lococa:init xmlns:lococa=\"http://www.lococa.org/1.0\"><provider");
  s.onEof();
  EXPECT_EQ(s.state(), InitSniffer::State::kRefused);
  EXPECT_EQ(s.code(), ErrorCode::kMalformed);
}

}  // namespace
}  // namespace lcc::front
