// libFuzzer target: the sitemap reader's properties (sitemap_properties.h).
#include <cstdio>
#include <cstdlib>

#include "sitemap_properties.h"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
  std::string why = lcc::sitemap::checkSitemapProperties(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!why.empty()) {
    std::fprintf(stderr, "sitemap property failed: %s\n", why.c_str());
    std::abort();
  }
  return 0;
}
