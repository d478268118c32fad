// Every mock can be made and used: mocks.h stays in step with the interfaces.
#include "support/mocks.h"

#include <gtest/gtest.h>

namespace lcc::testing {
namespace {

using ::testing::_;
using ::testing::Return;
using ::testing::ReturnRef;

TEST(MocksTest, EveryInterfaceHasAUsableMock) {
  MockClock clock;
  EXPECT_CALL(clock, schedule(Millis(5), _)).WillOnce(Return(TimerId{7}));
  EXPECT_EQ(clock.schedule(Millis(5), [] {}), 7u);

  MockEnv env;
  EXPECT_CALL(env, exists("x")).WillOnce(Return(true));
  EXPECT_TRUE(env.exists("x"));

  MockQueueStore q;
  StoreOpenInfo info;
  info.engine = "mock";
  EXPECT_CALL(q, openInfo()).WillRepeatedly(ReturnRef(info));
  EXPECT_CALL(q, entryCount()).WillOnce(Return(Result<std::uint64_t>(std::uint64_t{3})));
  EXPECT_EQ(q.openInfo().engine, "mock");
  EXPECT_EQ(q.entryCount().value(), 3u);

  MockContentStore c;
  EXPECT_CALL(c, maxSeq()).WillOnce(Return(Result<ChangeSeq>(ChangeSeq{9})));
  EXPECT_EQ(c.maxSeq().value(), 9u);

  MockProviderStore p;
  EXPECT_CALL(p, remove(4)).WillOnce(Return(Status::notFound("no")));
  EXPECT_TRUE(p.remove(4).isNotFound());

  MockFetcher f;
  EXPECT_CALL(f, inFlight()).WillOnce(Return(2u));
  EXPECT_EQ(f.inFlight(), 2u);

  MockExporter e;
  EXPECT_CALL(e, format()).WillOnce(Return(std::string_view("xml")));
  EXPECT_EQ(e.format(), "xml");

  MockByteSink sink;
  EXPECT_CALL(sink, write("abc")).WillOnce(Return(Status::ok()));
  EXPECT_TRUE(sink.write("abc").isOk());

  MockLogger logger;
  EXPECT_CALL(logger, log(LogLevel::kWarn, "w"));
  logger.warn("w");

  MockWritableFile wf;
  MockReadableFile rf;
  MockContentSource src;
  MockExportStream stream;
  EXPECT_CALL(stream, finish()).WillOnce(Return(Status::ok()));
  EXPECT_TRUE(stream.finish().isOk());
}

}  // namespace
}  // namespace lcc::testing
