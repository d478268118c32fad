#include "cu/cu_service.h"

namespace lcc::cu {

// Placeholder until the role lands: lccd refuses to run a role it does not have.
Result<ServicePtr> makeCuService(NodeContext& node) {
  (void)node;
  return Status::notSupported("the cu role is not built yet");
}

}  // namespace lcc::cu
