// The merged CU cursor token (proto/cu_cursor.h): round trips, one token per cursor,
// and every kind of mangled or hostile token refused with a message.
#include <gtest/gtest.h>

#include <random>

#include "proto/cu_cursor.h"
#include "proto/cu_query.h"

namespace lcc::proto {
namespace {

CuCursor cursorOf(std::initializer_list<std::pair<const char*, ChangeSeq>> parts) {
  CuCursor c;
  for (const auto& [s, seq] : parts) EXPECT_TRUE(c.set(s, seq).isOk()) << s;
  return c;
}

TEST(CuCursor, RoundTripsAndIsCanonical) {
  const CuCursor c = cursorOf({{"b2f0", 17}, {"a1", 0}, {"zz-shard:3", UINT64_MAX}});
  const std::string t = encodeCuCursor(c);
  EXPECT_EQ(t.rfind("c1.", 0), 0u) << t;
  auto back = decodeCuCursor(t);
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_EQ(*back, c);
  EXPECT_EQ(back->seqOf("b2f0"), 17u);
  EXPECT_EQ(back->seqOf("zz-shard:3"), UINT64_MAX);
  EXPECT_EQ(back->seqOf("absent"), 0u);
  EXPECT_EQ(encodeCuCursor(*back), t);
  // Sorted by source whatever the order of set().
  EXPECT_EQ(encodeCuCursor(cursorOf({{"a1", 0}, {"zz-shard:3", UINT64_MAX}, {"b2f0", 17}})), t);
  // An empty cursor is a token too.
  auto empty = decodeCuCursor(encodeCuCursor(CuCursor()));
  ASSERT_TRUE(empty.isOk());
  EXPECT_TRUE(empty->parts().empty());
}

TEST(CuCursor, EveryChangedCharacterIsRefused) {
  const std::string t = encodeCuCursor(cursorOf({{"0123456789abcdef0123456789abcdef", 123456}, {"peer2", 9}}));
  const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  for (std::size_t i = 3; i < t.size(); ++i) {
    for (char c : {alphabet[(alphabet.find(t[i]) + 1) % 64], alphabet[(alphabet.find(t[i]) + 17) % 64]}) {
      std::string m = t;
      m[i] = c;
      auto d = decodeCuCursor(m);
      EXPECT_FALSE(d.isOk()) << "position " << i << ": " << m;
      if (!d.isOk()) EXPECT_TRUE((d.status().code() == StatusCode::kInvalidArgument));
    }
  }
}

TEST(CuCursor, HostileTokensAreRefusedWithAReason) {
  const std::string good = encodeCuCursor(cursorOf({{"s1", 5}}));
  struct Case { std::string token; std::string says; };
  const std::vector<Case> cases = {
      {"", "must start with c1."},
      {"c2.AAAA", "must start with c1."},
      {"c1.", "mangled"},
      {"c1.!!!!", "mangled"},
      {"c1.AAAA=", "mangled"},
      {good.substr(0, good.size() - 1), "mangled"},
      {good + "A", "mangled"},
      {"c1." + std::string(9000, 'A'), "longer than"},
  };
  for (const auto& c : cases) {
    auto d = decodeCuCursor(c.token);
    ASSERT_FALSE(d.isOk()) << c.token;
    EXPECT_NE(d.status().message().find(c.says), std::string::npos) << c.token << ": " << d.status().message();
  }
}

TEST(CuCursor, RandomBytesNeverDecodeToSomethingElse) {
  std::mt19937 rng(7);
  const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string t = "c1.";
    const int n = static_cast<int>(rng() % 40);
    for (int k = 0; k < n; ++k) t.push_back(alphabet[rng() % 64]);
    auto d = decodeCuCursor(t);
    if (!d.isOk()) continue;
    ++accepted;
    EXPECT_EQ(encodeCuCursor(*d), t);  // what is accepted is canonical
  }
  EXPECT_LT(accepted, 5);  // a 32-bit checksum: random text is refused
}

TEST(CuCursor, SourceIdsAndSizeAreBounded) {
  CuCursor c;
  EXPECT_FALSE(c.set("", 1).isOk());
  EXPECT_FALSE(c.set("has space", 1).isOk());
  EXPECT_FALSE(c.set(std::string(65, 'a'), 1).isOk());
  for (std::size_t i = 0; i < kCuCursorMaxSources; ++i) ASSERT_TRUE(c.set("s" + std::to_string(i), i).isOk());
  EXPECT_FALSE(c.set("one-more", 1).isOk());
  EXPECT_TRUE(c.set("s3", 99).isOk());  // an existing part may change
  EXPECT_TRUE(decodeCuCursor(encodeCuCursor(c)).isOk());
}

TEST(CuCursor, TheQueryParsersTakeATokenAsSinceSeq) {
  const std::string t = encodeCuCursor(cursorOf({{"s1", 5}}));
  CuQueryError err;
  auto q = parseCuQueryParams({{"since_seq", t}}, &err);
  ASSERT_TRUE(q) << err.message;
  EXPECT_EQ(q->since_cursor, t);
  EXPECT_FALSE(q->since_seq);
  auto x = parseCuQueryXml(formatCuQueryXml(*q), &err);
  ASSERT_TRUE(x.isOk()) << err.message;
  EXPECT_EQ(x->since_cursor, t);
  EXPECT_TRUE(parseCuQueryParams({{"since_seq", "42"}}, &err)->since_seq == 42u);
  std::string mangled = t;
  mangled[5] = mangled[5] == 'A' ? 'B' : 'A';
  EXPECT_FALSE(parseCuQueryParams({{"since_seq", mangled}}, &err));
  EXPECT_NE(err.message.find("mangled"), std::string::npos) << err.message;
  EXPECT_FALSE(parseCuQueryParams({{"since_seq", t}, {"since_seq", "4"}}, &err));
}

}  // namespace
}  // namespace lcc::proto
