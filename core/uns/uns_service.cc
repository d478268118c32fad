#include "uns/uns_service.h"

namespace lcc::uns {

// Placeholder until the role lands: lccd refuses to run a role it does not have.
Result<ServicePtr> makeUnsService(NodeContext& node) {
  (void)node;
  return Status::notSupported("the uns role is not built yet");
}

}  // namespace lcc::uns
