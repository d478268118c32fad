// server_config.h — ServerOptions from the http.* and listen.http config keys.
#pragma once

#include "common/config/config.h"
#include "http/http_server.h"

namespace lcc::http {

ServerOptions serverOptionsFromConfig(const Config& cfg);

}  // namespace lcc::http
