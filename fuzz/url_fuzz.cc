// libFuzzer target: the URL normal form's properties (url_properties.h).
#include <cstdio>
#include <cstdlib>

#include "url_properties.h"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
  std::string why = lcc::url::checkUrlProperties(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!why.empty()) {
    std::fprintf(stderr, "url property failed: %s\n", why.c_str());
    std::abort();
  }
  return 0;
}
