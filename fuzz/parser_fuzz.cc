// libFuzzer target for one of the parser properties of parser_properties.h, chosen at
// build time: LCC_FUZZ_CHECK names the function (fuzz/CMakeLists.txt builds one
// executable per target from this file).
#include <cstdio>
#include <cstdlib>

#include "parser_properties.h"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
  const std::string why = lcc::fuzz::LCC_FUZZ_CHECK(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!why.empty()) {
    std::fprintf(stderr, "property failed: %s\n", why.c_str());
    std::abort();
  }
  return 0;
}
