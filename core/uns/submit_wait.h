// submit_wait.h — a set handed to the UNS's forwarder by a thread that waits for the
// outcome: what IndexNow (an HTTP worker, before its 202) and the sitemap poller (its
// own thread, before it writes its state) need. Durable exactly as a CP's set is.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "uns/forwarder.h"

namespace lcc::uns {

// Submits `set` and blocks until the forwarder answers (it answers every set it
// keeps running for: durable, or refused with 130); past `wait`, refused with 140.
SetOutcome submitAndWait(Forwarder& forwarder, SetSubmission set, Millis wait = Millis(120 * 1000));

// What the other ways in are given (indexnow/indexnow_routes.h, sitemap/sitemap_poll.h):
// a partial set of `count` <url/> elements for `pid` through submitAndWait; OK once
// durable, else an error whose message is "CODE text" (the refusal's code and message).
std::function<Status(ProviderId pid, std::uint64_t count, std::string urls_xml)> partialSetSubmitter(
    Forwarder& forwarder);

}  // namespace lcc::uns
