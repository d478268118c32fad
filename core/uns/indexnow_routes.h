// indexnow_routes.h — the IndexNow endpoints of a node that runs the uns role: the
// receiver of core/indexnow, with its sets going through this UNS's forwarder (so an
// IndexNow list is durable exactly when a CP's set would be) and its key files read
// through the node's fetcher.
#pragma once

#include "common/service.h"
#include "uns/forwarder.h"

namespace lcc::uns {

// Registers /indexnow and /IndexNow when the node has an HTTP port and a fetcher.
void addIndexNowRoutes(NodeContext& node, Forwarder& forwarder);

}  // namespace lcc::uns
