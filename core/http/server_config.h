// server_config.h — ServerOptions from the http.* and listen.http config keys.
#pragma once

#include "common/config/config.h"
#include "http/http_server.h"

namespace lcc::http {

// `metrics` (may be null) receives the lcc_http_* counters.
ServerOptions serverOptionsFromConfig(const Config& cfg, Metrics* metrics = nullptr);

}  // namespace lcc::http
