#include "uns/submit_wait.h"

#include <future>
#include <memory>

namespace lcc::uns {

SetOutcome submitAndWait(Forwarder& forwarder, SetSubmission set, Millis wait) {
  auto outcome = std::make_shared<std::promise<SetOutcome>>();
  auto future = outcome->get_future();
  forwarder.submit(std::move(set), [outcome](const SetOutcome& o) { outcome->set_value(o); });
  if (future.wait_for(wait) != std::future_status::ready) {
    return SetOutcome{false, ErrorCode::kInternal, "no answer from the UNS"};
  }
  return future.get();
}

}  // namespace lcc::uns
