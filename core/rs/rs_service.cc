#include "rs/rs_service.h"

namespace lcc::rs {

// Placeholder until the role lands: lccd refuses to run a role it does not have.
Result<ServicePtr> makeRsService(NodeContext& node) {
  (void)node;
  return Status::notSupported("the rs role is not built yet");
}

}  // namespace lcc::rs
