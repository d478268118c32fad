#include "qm/qm_service.h"

namespace lcc::qm {

// Placeholder until the role lands: lccd refuses to run a role it does not have.
Result<ServicePtr> makeQmService(NodeContext& node) {
  (void)node;
  return Status::notSupported("the qm role is not built yet");
}

}  // namespace lcc::qm
