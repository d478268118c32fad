// qm_service.h — the qm role as lccd runs it (see README.md in this folder).
#pragma once

#include "common/service.h"

namespace lcc::qm {

// lccd's exit code when its QM was fenced: another QM took the lease over
// (storage-postgres option qm_lease; docs/commands.md).
constexpr int kExitFenced = 4;

// Builds the role from the node's config, stores and plugins.
Result<ServicePtr> makeQmService(NodeContext& node);

}  // namespace lcc::qm
