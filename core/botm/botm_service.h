// botm_service.h — the botm role as lccd runs it (see README.md in this folder).
#pragma once

#include "common/service.h"

namespace lcc::botm {

// Builds the role from the node's config, stores and plugins. A leaf BOT-M (robots,
// filename management) also adds GET /content/<file> to node.http (content_route.h).
Result<ServicePtr> makeBotmService(NodeContext& node);

// The content URL a leaf BOT-M advertises: botm.content_url, where "auto" is
// http://<listen.http> when the node has an HTTP port (a wildcard host becomes the
// host's name) and "" means not advertised. InvalidArgument for a bad URL.
Result<std::string> contentUrlFromConfig(const Config& cfg, bool has_http);

}  // namespace lcc::botm
