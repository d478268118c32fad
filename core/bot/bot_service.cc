#include "bot/bot_service.h"

namespace lcc::bot {

// Placeholder until the role lands: lccd refuses to run a role it does not have.
Result<ServicePtr> makeBotService(NodeContext& node) {
  (void)node;
  return Status::notSupported("the bot role is not built yet");
}

}  // namespace lcc::bot
