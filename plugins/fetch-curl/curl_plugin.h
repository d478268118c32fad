// curl_plugin.h — fetch-curl: the production Fetcher (libcurl multi interface).
#pragma once

#include "lcc/plugin.h"

namespace lcc::plugins::curl {

const PluginDescriptor* describe();

}  // namespace lcc::plugins::curl
