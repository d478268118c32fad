// Runs the sitemap fuzz target's property function (fuzz/sitemap_properties.h) over the seed
// corpus fuzz/corpus/sitemap/, so the normal build checks what the fuzzer checks.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sitemap_properties.h"

namespace lcc::sitemap {
namespace {

TEST(SitemapCorpusTest, EverySeedKeepsTheProperties) {
  const std::filesystem::path dir = std::filesystem::path(LCC_SOURCE_DIR) / "fuzz" / "corpus" / "sitemap";
  std::size_t seeds = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream data;
    data << in.rdbuf();
    EXPECT_EQ(checkSitemapProperties(data.str()), "") << entry.path();
    ++seeds;
  }
  EXPECT_GE(seeds, 10u);
}

}  // namespace
}  // namespace lcc::sitemap
