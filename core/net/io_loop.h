// io_loop.h — ending an io_context so that what its handlers own is freed.
#pragma once

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <thread>

namespace lcc::net {

// Lets `io`'s loop run dry for at most `bound`, then stops it; true if it ran dry. Call
// it once the services are stopped and the work guard is gone; the caller then joins
// the threads that run the loop. A Connection drops its handlers (and the session
// they keep alive) in a last turn of its strand after it closed: io.stop() at once
// would skip that turn, and the session, its buffers and its decoder would outlive
// the loop (LeakSanitizer reports them at exit).
inline bool stopWhenDry(boost::asio::io_context& io, std::chrono::milliseconds bound) {
  const auto until = std::chrono::steady_clock::now() + bound;
  while (!io.stopped() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const bool dry = io.stopped();
  io.stop();
  return dry;
}

}  // namespace lcc::net
