// broken_plugin.cc — one source for the deliberately broken test plugins; each
// target sets what is wrong with compile definitions (see CMakeLists.txt):
//   LCC_TEST_NAME       the name in the descriptor
//   LCC_TEST_ABI_MAJOR  / LCC_TEST_ABI_MINOR / LCC_TEST_SIGNATURE / LCC_TEST_API_HASH
//   LCC_TEST_NO_ALIAS   no lcc_plugin export at all
//   LCC_TEST_THROW      the fetcher factory throws (no LCC_PLUGIN_GUARD)
#include <stdexcept>

#include "lcc/plugin.h"

#ifndef LCC_TEST_ABI_MAJOR
#define LCC_TEST_ABI_MAJOR LCC_PLUGIN_ABI_MAJOR
#endif
#ifndef LCC_TEST_ABI_MINOR
#define LCC_TEST_ABI_MINOR LCC_PLUGIN_ABI_MINOR
#endif
#ifndef LCC_TEST_SIGNATURE
#define LCC_TEST_SIGNATURE LCC_BUILD_SIGNATURE
#endif
#ifndef LCC_TEST_API_HASH
#define LCC_TEST_API_HASH LCC_API_HASH
#endif

namespace lcc::plugins::broken {
namespace {

Result<Fetcher*> makeFetcher(const HostContext&, const OptionsView&) {
#ifdef LCC_TEST_THROW
  throw std::runtime_error("this factory always throws");
#else
  return Status::notSupported("broken test plugin: no fetcher");
#endif
}

}  // namespace

const PluginDescriptor* describe() {
  static const PluginDescriptor kDescriptor = {
      .abi_major = LCC_TEST_ABI_MAJOR,
      .abi_minor = LCC_TEST_ABI_MINOR,
      .descriptor_size = sizeof(PluginDescriptor),
      .build_signature = LCC_TEST_SIGNATURE,
      .api_hash = LCC_TEST_API_HASH,
      .name = LCC_TEST_NAME,
      .version = "0.0-test",
      .provides = kProvidesFetcher,
      .make_fetcher = &makeFetcher,
  };
  return &kDescriptor;
}

}  // namespace lcc::plugins::broken

#ifndef LCC_TEST_NO_ALIAS
#include <boost/dll/alias.hpp>
BOOST_DLL_ALIAS(lcc::plugins::broken::describe, lcc_plugin)
#endif
