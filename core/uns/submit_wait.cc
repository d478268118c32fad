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

std::function<Status(ProviderId, std::uint64_t, std::string)> partialSetSubmitter(Forwarder& forwarder) {
  return [&forwarder](ProviderId pid, std::uint64_t count, std::string urls_xml) -> Status {
    SetSubmission set;
    set.pid = pid;
    set.kind = SetKind::kPartial;
    set.count = count;
    set.urls_xml = std::move(urls_xml);
    const SetOutcome o = submitAndWait(forwarder, std::move(set));
    if (o.accepted) return Status::ok();
    return Status::busy(std::to_string(static_cast<int>(o.code)) + " " + o.message);
  };
}

}  // namespace lcc::uns
