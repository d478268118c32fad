// The intake journal's records (qm/intake_set.h): what is encoded is decoded back,
// every op a notice may carry included, and a record that was not written by the
// encoder is refused.
#include "qm/intake_set.h"

#include <gtest/gtest.h>

namespace lcc::qm {
namespace {

UrlNotice notice(std::string url, UrlOp op) {
  UrlNotice n;
  n.key.pid = 7;
  n.key.url = std::move(url);
  n.key.mime = "text/html";
  n.op = op;
  return n;
}

std::vector<UrlNotice> everyOp() {
  std::vector<UrlNotice> urls{notice("http://a.example/u", UrlOp::kUpdate),
                              notice("http://a.example/d", UrlOp::kDelete),
                              notice("http://a.example/c", UrlOp::kCheck)};
  urls[0].browse = "";
  urls[0].mtime = -5;
  urls[0].size = 12;
  urls[0].md5 = "0123456789abcdef0123456789abcdef";
  urls[0].tod = "0-8";
  urls[0].view_tag = "v";
  urls[0].fetch = "http://a.example/f";
  return urls;
}

// An IndexNow or sitemap notice (op check) is journaled like any other: a set that
// holds one must come back from the journal whole, or the acked set is lost at replay.
TEST(IntakeSetTest, AWholeSetWithEveryOpComesBack) {
  IntakeSet set{"m1/uns", 42, 7, SetKind::kFull, everyOp()};
  auto back = decodeIntakeSet(encodeIntakeSet(set));
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_EQ(*back, set);
}

TEST(IntakeSetTest, AStreamedPartWithEveryOpComesBack) {
  const auto urls = everyOp();
  auto part = decodeIntakePart(encodeIntakePart(99, urls), 7);
  ASSERT_TRUE(part.isOk()) << part.status().message();
  EXPECT_EQ(part->begin, 99u);
  EXPECT_EQ(part->urls, urls);
}

TEST(IntakeSetTest, AnOpThatDoesNotExistIsRefused) {
  IntakeSet set{"", 0, 7, SetKind::kPartial, {notice("http://a.example/x", UrlOp::kUpdate)}};
  std::string rec = encodeIntakeSet(set);
  const std::size_t op_at = rec.find("http://a.example/x") - 4 - 2;  // op, flags, the url's length
  ASSERT_EQ(rec[op_at], '\0');
  rec[op_at] = static_cast<char>(kUrlOpMax + 1);
  EXPECT_FALSE(decodeIntakeSet(rec).isOk());
}

}  // namespace
}  // namespace lcc::qm
