// Runs each parser fuzz target's property function (fuzz/parser_properties.h) over its
// seed corpus fuzz/corpus/<name>/, so the normal build checks what the fuzzers check
// (the corpora hold the inputs the fuzzers found, kept as regression seeds).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "parser_properties.h"

namespace lcc::fuzz {
namespace {

using Check = std::string (*)(std::string_view);

struct Target {
  const char* name;
  Check check;
};

class ParserCorpusTest : public ::testing::TestWithParam<Target> {};

TEST_P(ParserCorpusTest, EverySeedKeepsTheProperties) {
  const std::filesystem::path dir = std::filesystem::path(LCC_SOURCE_DIR) / "fuzz" / "corpus" / GetParam().name;
  std::size_t seeds = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream data;
    data << in.rdbuf();
    EXPECT_EQ(GetParam().check(data.str()), "") << entry.path();
    ++seeds;
  }
  EXPECT_GE(seeds, 3u);
}

INSTANTIATE_TEST_SUITE_P(Targets, ParserCorpusTest,
                         ::testing::Values(Target{"cp_uns", checkCpUnsProperties},
                                           Target{"cu_query", checkCuQueryProperties},
                                           Target{"cu_cursor", checkCuCursorProperties},
                                           Target{"uns_qm", checkUnsQmProperties},
                                           Target{"botm_link", checkBotmLinkProperties},
                                           Target{"link_frames", checkLinkFramesProperties},
                                           Target{"robot_frames", checkRobotFramesProperties},
                                           Target{"config", checkConfigProperties},
                                           Target{"journal", checkJournalProperties},
                                           Target{"proxy_header", checkProxyHeaderProperties},
                                           Target{"indexnow", checkIndexNowProperties},
                                           Target{"http_request", checkHttpRequestProperties}),
                         [](const ::testing::TestParamInfo<Target>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace lcc::fuzz
