// md5_test.cc — the MD5 helper: digests in lower-case hex, and isMd5Hex(), the check
// every URL's md5 attribute passes at the UNS.
#include "common/md5.h"

#include <gtest/gtest.h>

#include <string>

namespace lcc {
namespace {

TEST(Md5Test, DigestsAreLowerCaseHex) {
  EXPECT_EQ(Md5::of(""), "d41d8cd98f00b204e9800998ecf8427e");
  EXPECT_EQ(Md5::of("abc"), "900150983cd24fb0d6963f7d28e17f72");
  Md5 m;  // reusable after a digest
  m.update("a");
  m.update("bc");
  EXPECT_EQ(m.hexDigest(), "900150983cd24fb0d6963f7d28e17f72");
  m.update("");
  EXPECT_EQ(m.hexDigest(), "d41d8cd98f00b204e9800998ecf8427e");
}

TEST(Md5Test, IsMd5HexTakesExactlyThirtyTwoLowerCaseHexDigits) {
  EXPECT_TRUE(isMd5Hex("900150983cd24fb0d6963f7d28e17f72"));
  EXPECT_TRUE(isMd5Hex(std::string(32, 'f')));
  EXPECT_FALSE(isMd5Hex(""));
  EXPECT_FALSE(isMd5Hex(std::string(31, 'a')));
  EXPECT_FALSE(isMd5Hex(std::string(33, 'a')));
  EXPECT_FALSE(isMd5Hex("900150983CD24FB0D6963F7D28E17F72"));  // upper case is not the form stored
  // Every byte value in every position: only 0-9 and a-f pass.
  for (int pos : {0, 15, 31}) {
    for (int b = 0; b < 256; ++b) {
      std::string s(32, '0');
      s[static_cast<std::size_t>(pos)] = static_cast<char>(b);
      const bool hex = (b >= '0' && b <= '9') || (b >= 'a' && b <= 'f');
      EXPECT_EQ(isMd5Hex(s), hex) << "byte " << b << " at " << pos;
    }
  }
}

}  // namespace
}  // namespace lcc
