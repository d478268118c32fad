// The single-buffer normalizer (core/support/url_norm.cc, docs/design-decisions.md "CPU
// per URL") against the answers of the one it replaced: tests/url/data/normalize_golden.txt
// holds, for 2,280 inputs (the hostile table of url_norm_test.cc, the url fuzz corpus, and
// up to three random edits of each, mostly in the path, with '.', '..', '%2e', '%2F', ';', '%', ports, UTF-8 and
// such), what normalizeUrl, normalizePrefix and normalizeUrl with a 40-byte bound answered
// at commit 1f9dbe7: the same normal form, or the same refusal with the same reason.
// Line format: HEX(input) KIND ANSWER, KIND U (normalizeUrl), P (normalizePrefix) or
// L (normalizeUrl, max_length 40), ANSWER "=" HEX(normal form) or "!" reason.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "lcc/support/url_norm.h"

namespace lcc::url {
namespace {

std::string unhex(std::string_view h) {
  std::string out;
  for (std::size_t i = 0; i + 1 < h.size(); i += 2) out.push_back(static_cast<char>(std::stoi(std::string(h.substr(i, 2)), nullptr, 16)));
  return out;
}

std::string answer(const Result<std::string>& r) {
  if (!r.isOk()) return "!" + r.status().message();
  static const char* k = "0123456789abcdef";
  std::string out = "=";
  for (unsigned char c : r.value()) {
    out.push_back(k[c >> 4]);
    out.push_back(k[c & 15]);
  }
  return out;
}

TEST(UrlGoldenTest, EveryAnswerIsTheOneBeforeTheRewrite) {
  std::ifstream in(std::filesystem::path(LCC_SOURCE_DIR) / "tests" / "url" / "data" / "normalize_golden.txt");
  ASSERT_TRUE(in) << "golden file missing";
  std::string line;
  std::size_t lines = 0, normal = 0;
  while (std::getline(in, line)) {
    const auto sp1 = line.find(' ');
    ASSERT_NE(sp1, std::string::npos) << line;
    const std::string input = unhex(std::string_view(line).substr(0, sp1));
    const char kind = line[sp1 + 1];
    const std::string want = line.substr(sp1 + 3);
    std::string got;
    if (kind == 'U') got = answer(normalizeUrl(input));
    if (kind == 'P') got = answer(normalizePrefix(input));
    if (kind == 'L') got = answer(normalizeUrl(input, 40));
    ASSERT_EQ(got, want) << kind << " " << input;
    normal += want[0] == '=';
    ++lines;
  }
  EXPECT_GE(lines, 6000u);
  EXPECT_GE(normal, 1000u);  // the table is not all refusals
}

}  // namespace
}  // namespace lcc::url
