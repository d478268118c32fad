// botm_service.h — the botm role as lccd runs it (see README.md in this folder).
#pragma once

#include "common/service.h"

namespace lcc::botm {

// Builds the role from the node's config, stores and plugins.
Result<ServicePtr> makeBotmService(NodeContext& node);

}  // namespace lcc::botm
