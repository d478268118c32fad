// front_service.h — the `front` role (README.md in this folder): many LCCs as one.
// Makes FrontCore (the PMDB/FEDB on PostgreSQL, placement), the refresher thread
// (lcc-front-load: every front.refresh_interval, each sub-LCC's load, then the pending
// rows), the admin routes that replace the node's own provider routes, and the CP relay.
#pragma once

#include "common/service.h"

namespace lcc::front {

Result<ServicePtr> makeFrontService(NodeContext& node);

}  // namespace lcc::front
