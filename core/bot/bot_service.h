// bot_service.h — the bot role as lccd runs it (see README.md in this folder).
#pragma once

#include "common/service.h"

namespace lcc::bot {

// Builds the role from the node's config, stores and plugins.
Result<ServicePtr> makeBotService(NodeContext& node);

}  // namespace lcc::bot
