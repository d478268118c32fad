// loopback.h — a plain blocking client socket to 127.0.0.1 for tests of servers.
#pragma once

#include <cstdint>

namespace lcc::testing {

// Connects to 127.0.0.1:port; the descriptor, or -1. Reads time out after 20 s, so
// that a test waiting for an answer cannot hang.
int connectLoopback(std::uint16_t port);

// The same from the source address `source` (127.0.0.2, 127.0.0.3...: the server
// tells the clients apart by it); the descriptor, or -1.
int connectLoopbackFrom(std::uint16_t port, const char* source);

// A listening socket on 127.0.0.1 at a port the kernel picks (written to *port); the
// descriptor, or -1. For a test's stand-in of a server.
int listenLoopback(std::uint16_t* port);

}  // namespace lcc::testing
