// rs_service.h — the rs role as lccd runs it (see README.md in this folder).
#pragma once

#include "common/service.h"

namespace lcc::rs {

// Builds the role from the node's config, stores and plugins.
Result<ServicePtr> makeRsService(NodeContext& node);

}  // namespace lcc::rs
