// uns_service.h — the uns role as lccd runs it (see README.md in this folder).
#pragma once

#include "common/service.h"

namespace lcc::uns {

// Builds the role from the node's config, stores and plugins.
Result<ServicePtr> makeUnsService(NodeContext& node);

}  // namespace lcc::uns
