// storage-kyoto's row codec: a provider row written before state_reason existed (it
// ends after `created`) still decodes, with an empty reason; the reason round-trips.
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

TEST(KyotoProviderCodec, ARowFromBeforeTheStateReasonDecodesWithNone) {
  ProviderRecord p = sample();
  std::string row = encodeProvider(p);  // an empty reason is one byte: its length 0
  ASSERT_EQ(row.back(), '\0');
  row.pop_back();
  auto back = decodeProvider(row);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, p);
  // Anything after the reason is still refused.
  EXPECT_FALSE(decodeProvider(encodeProvider(p) + "x").has_value());
  // And a cut inside the reason too.
  p.state_reason = "gone";
  std::string cut = encodeProvider(p);
  cut.pop_back();
  EXPECT_FALSE(decodeProvider(cut).has_value());
}

}  // namespace
}  // namespace lcc::plugins::kyoto
