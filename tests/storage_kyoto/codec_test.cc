// storage-kyoto's row codec: a provider row written before state_reason existed (it
// ends after `created`) still decodes, with an empty reason, and one written before the
// sitemap fields (it ends after the reason) with no sitemap; both round-trip.
// Likewise a content row written before created_seq (it ends after declared_md5)
// decodes with created_seq 0 (unknown), and one written before the etag (it ends after
// created_seq) with no etag.
#include <gtest/gtest.h>

#include "record_codec.h"

namespace lcc::plugins::kyoto {
namespace {

ProviderRecord sample() {
  ProviderRecord p;
  p.id = 7;
  p.state = ProviderState::kSuspended;
  p.password_hash = "$lcc-b2k$1$aa$bb";
  p.prefixes = {"http://a.example/"};
  p.secret = "0123456789abcdef0123456789abcdef";
  p.secret_url = "http://a.example/lococa-secret.txt";
  p.created = fromUnixMillis(1714400000000);
  return p;
}

TEST(KyotoProviderCodec, TheStateReasonRoundTrips) {
  ProviderRecord p = sample();
  p.state_reason = "re-verification: the secret file is gone";
  auto back = decodeProvider(encodeProvider(p));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, p);
}

TEST(KyotoProviderCodec, TheSitemapRoundTrips) {
  ProviderRecord p = sample();
  p.sitemap_url = "http://a.example/sitemap.xml";
  p.sitemap_interval = Millis(6 * 3600 * 1000);
  auto back = decodeProvider(encodeProvider(p));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, p);
}

TEST(KyotoProviderCodec, ARowFromBeforeTheSitemapDecodesWithNone) {
  ProviderRecord p = sample();
  p.state_reason = "gone";
  std::string row = encodeProvider(p);  // an empty URL and interval 0: two bytes 0
  ASSERT_EQ(row.substr(row.size() - 2), std::string(2, '\0'));
  row.resize(row.size() - 2);
  auto back = decodeProvider(row);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, p);
  row.resize(row.size() - 1);  // a cut inside the reason
  EXPECT_FALSE(decodeProvider(row).has_value());
}

TEST(KyotoProviderCodec, ARowFromBeforeTheStateReasonDecodesWithNone) {
  ProviderRecord p = sample();
  std::string row = encodeProvider(p);  // an empty reason, URL and interval 0: three bytes 0
  ASSERT_EQ(row.substr(row.size() - 3), std::string(3, '\0'));
  row.resize(row.size() - 3);
  auto back = decodeProvider(row);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, p);
  // Anything after the reason is still refused.
  EXPECT_FALSE(decodeProvider(encodeProvider(p) + "x").has_value());
  // And a cut inside the sitemap URL too.
  p.sitemap_url = "http://a.example/s.xml";
  std::string cut = encodeProvider(p);
  cut.resize(cut.size() - 2);
  EXPECT_FALSE(decodeProvider(cut).has_value());
}

ContentRecord content() {
  ContentRecord c;
  c.key = {3, "http://a.example/x", "text/html"};
  c.seq = 41;
  c.size = 5;
  c.md5 = "0123456789abcdef0123456789abcdef";
  c.stored = fromUnixMillis(1714400000000);
  c.declared_md5 = "fedcba9876543210fedcba9876543210";
  return c;
}

TEST(KyotoContentCodec, TheCreatedSeqRoundTrips) {
  ContentRecord c = content();
  c.created_seq = 300;  // more than one varint byte
  auto back = decodeContent(encodeUrlKey(c.key), encodeContent(c));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, c);
}

TEST(KyotoContentCodec, ARowFromBeforeTheCreatedSeqDecodesAsUnknown) {
  ContentRecord c = content();
  c.created_seq = 0;
  std::string row = encodeContent(c);  // created_seq 0 and the empty etag: one byte each, 0
  ASSERT_EQ(row.substr(row.size() - 2), std::string(2, '\0'));
  row.resize(row.size() - 2);
  auto back = decodeContent(encodeUrlKey(c.key), row);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, c);
  EXPECT_FALSE(decodeContent(encodeUrlKey(c.key), encodeContent(c) + "x").has_value()) << "trailing bytes";
  c.created_seq = 300;
  std::string cut = encodeContent(c);
  cut.resize(cut.size() - 2);  // the empty etag and the last byte of created_seq
  EXPECT_FALSE(decodeContent(encodeUrlKey(c.key), cut).has_value()) << "a cut inside the created_seq";
}

TEST(KyotoContentCodec, TheEtagRoundTripsAndARowFromBeforeItHasNone) {
  ContentRecord c = content();
  c.created_seq = 300;
  c.etag = "W/\"5e-61a2\"";
  auto back = decodeContent(encodeUrlKey(c.key), encodeContent(c));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, c);
  // A row written before the etag ends after created_seq.
  ContentRecord old = c;
  old.etag.clear();
  std::string row = encodeContent(old);
  ASSERT_EQ(row.back(), '\0');
  row.pop_back();
  back = decodeContent(encodeUrlKey(c.key), row);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, old);
  std::string cut = encodeContent(c);
  cut.pop_back();
  EXPECT_FALSE(decodeContent(encodeUrlKey(c.key), cut).has_value()) << "a cut inside the etag";
}

}  // namespace
}  // namespace lcc::plugins::kyoto
