// lcc/fetcher.h — an asynchronous URL fetcher (fetch-curl, fetch-stub).
//
// WHO CALLS IT: a robot (core/bot) and the RS (fetching a registration secret).
// THREADS: start(), cancel() and inFlight() are thread-safe. `done` runs on a thread
// of the fetcher (or the clock's timer thread), never inside start(); it must be
// short and must not call back into the fetcher synchronously... except start() of
// a new fetch, which is allowed.
// CONTRACT:
//  - `done` is called exactly once per accepted start(), also on cancel() and stop()
//    (with code kInternal and message "cancelled").
//  - On success the body is in request.path (created or truncated), result.size and
//    result.md5 describe exactly those bytes, and the file is closed (not synced:
//    the robot decides). On failure request.path may hold partial data; the caller
//    removes it. With unchanged=true (HTTP 304) the file is not touched.
//  - Every outcome maps to a code of docs/protocol.md §2 (kNone on success).
// PRECONDITIONS:
//  REQUIRES: request.id unique among this fetcher's fetches in flight.
#pragma once

#include <cstddef>
#include <functional>

#include "lcc/status.h"
#include "lcc/types.h"

namespace lcc {

using FetchDone = std::function<void(const FetchResult&)>;

class Fetcher {
 public:
  virtual ~Fetcher() = default;  // implies stop()
  Fetcher() = default;
  Fetcher(const Fetcher&) = delete;
  Fetcher& operator=(const Fetcher&) = delete;

  // Accepts a fetch; a non-OK status means it was not accepted and `done` will not run.
  virtual Status start(const FetchRequest& request, FetchDone done) = 0;
  // Ends a fetch early; its `done` still runs once.
  virtual void cancel(std::uint64_t id) = 0;
  virtual std::size_t inFlight() const = 0;
  // Cancels everything and joins the fetcher's threads. Idempotent.
  virtual void stop() = 0;
};

}  // namespace lcc
