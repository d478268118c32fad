// cu_service.h — the cu role as lccd runs it (see README.md in this folder).
#pragma once

#include "common/service.h"

namespace lcc::cu {

// Builds the role from the node's config, stores and plugins.
Result<ServicePtr> makeCuService(NodeContext& node);

}  // namespace lcc::cu
