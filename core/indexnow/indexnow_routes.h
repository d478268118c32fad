// indexnow_routes.h — the IndexNow endpoints of a node that runs the uns role: the
// receiver (receiver.h), with its sets going through the UNS's forwarder (so an
// IndexNow list is durable exactly when a CP's set would be; uns/submit_wait.h,
// partialSetSubmitter) and its key files read through the node's fetcher.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "common/service.h"
#include "lcc/status.h"
#include "lcc/types.h"

namespace lcc::indexnow {

// A partial set of `count` <url/> elements for `pid`; returns once durable (OK) or
// refused (the message says why: "CODE text").
using SubmitSet = std::function<Status(ProviderId pid, std::uint64_t count, std::string urls_xml)>;

// Registers /indexnow and /IndexNow when the node has an HTTP port and a fetcher.
void addIndexNowRoutes(NodeContext& node, SubmitSet submit);

}  // namespace lcc::indexnow
