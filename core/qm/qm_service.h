// qm_service.h — the qm role as lccd runs it (see README.md in this folder).
#pragma once

#include "common/service.h"

namespace lcc::qm {

// Builds the role from the node's config, stores and plugins.
Result<ServicePtr> makeQmService(NodeContext& node);

}  // namespace lcc::qm
