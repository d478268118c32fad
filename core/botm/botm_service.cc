#include "botm/botm_service.h"

namespace lcc::botm {

// Placeholder until the role lands: lccd refuses to run a role it does not have.
Result<ServicePtr> makeBotmService(NodeContext& node) {
  (void)node;
  return Status::notSupported("the botm role is not built yet");
}

}  // namespace lcc::botm
