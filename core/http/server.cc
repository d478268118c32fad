#include "http/http_server.h"

namespace lcc::http {

// Placeholder until the Beast server lands: start() refuses.
struct Server::Impl {};

Server::Server(boost::asio::io_context& io, const Router& router, ServerOptions options) : impl_(new Impl) {
  (void)io, (void)router, (void)options;
}
Server::~Server() = default;
Status Server::start() { return Status::notSupported("the HTTP server is not built yet"); }
void Server::stop() {}
std::uint16_t Server::port() const { return 0; }

}  // namespace lcc::http
