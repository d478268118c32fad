// server_connection.h — one connection of the HTTP server (server.cc), plain or TLS.
// Internal to core/http.
//
// Runs on the connection's strand: reads bytes into a buffer bounded by
// RequestReader::bufferLimit() and feeds them to a RequestReader (request_reader.h:
// every limit and framing rule), hands a complete request to the `workers` pool,
// writes the answer. A refused request gets its 4xx and the connection closes.
// Deadlines: the wait for a request `idle_timeout`; from its first byte the header
// within `header_timeout`; the body within `idle_timeout`; every write must move bytes
// within `write_timeout`. Per address: requests in the handler pool and streamed
// answers are bounded (503 + Retry-After beyond), AddressSlots.
#pragma once

#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <spdlog/spdlog.h>

#include "http/server_shared.h"
#include "http/url_codec.h"
#include "net/tls.h"

namespace lcc::http {

using TlsStream = boost::beast::ssl_stream<boost::beast::tcp_stream>;

// The parts of turning a Beast request into ours that do not depend on the stream.
// "" when it is acceptable, else the 400 answer's body.
std::string toRequest(BeastRequest& msg, Request* req);
// 503 with Retry-After, for an address over one of its limits.
Response busyResponse(const char* what);

template <class Stream>
struct Connection final : ConnBase, std::enable_shared_from_this<Connection<Stream>> {
  static constexpr bool kTls = !std::is_same_v<Stream, boost::beast::tcp_stream>;
  using std::enable_shared_from_this<Connection<Stream>>::shared_from_this;
  using std::enable_shared_from_this<Connection<Stream>>::weak_from_this;
  using error_code = boost::beast::error_code;

  std::shared_ptr<Shared> shared;
  std::uint64_t id = 0;
  Stream stream;
  boost::beast::flat_buffer buffer;
  std::optional<RequestReader> reader;
  bool header_deadline_armed = false;
  std::string remote_ip;
  bool remote_loopback = false;
  AddressSlots::Slot slot;           // this connection's place among its address's
  std::shared_ptr<void> descriptor_place;  // its descriptor in net::DescriptorBudget::process()
  std::shared_ptr<StreamSink> sink;  // while a streamed body is being sent
  bool closed = false;
  net::TlsContextPtr tls_context;  // TLS: outlives the session made from it

  template <class... TlsContext>
  Connection(std::shared_ptr<Shared> s, boost::asio::ip::tcp::socket socket, std::string ip, bool loopback,
             AddressSlots::Slot address_slot, TlsContext&... ctx)
      : shared(std::move(s)), stream(std::move(socket), ctx...),
        buffer(RequestReader::bufferLimit(shared->limits)), remote_ip(std::move(ip)),
        remote_loopback(loopback), slot(std::move(address_slot)) {}

  ~Connection() override {
    {
      std::lock_guard<std::mutex> lock(shared->mu);
      shared->conns.erase(id);
    }
    shared->open.fetch_sub(1);
    if (shared->open_gauge) shared->open_gauge->add(-1);
  }

  std::chrono::milliseconds timeout() const { return shared->options.idle_timeout; }
  std::chrono::milliseconds writeTimeout() const {
    return shared->options.write_timeout;
  }
  boost::beast::tcp_stream& lowest() { return boost::beast::get_lowest_layer(stream); }

  void start() {
    boost::asio::dispatch(stream.get_executor(), [self = shared_from_this()] {
      if constexpr (kTls) {
        // The handshake within the header timeout; a failed one (plain text, a client
        // that refuses our certificate) just closes.
        self->lowest().expires_after(self->shared->options.header_timeout);
        self->stream.async_handshake(boost::asio::ssl::stream_base::server, [self](error_code ec) {
          if (ec) {
            spdlog::debug("http: TLS handshake with {}: {}", self->remote_ip, ec.message());
            return self->close();
          }
          self->readRequest();
        });
      } else {
        self->readRequest();
      }
    });
  }

  void closeFromOutside() override {
    boost::asio::post(stream.get_executor(), [self = shared_from_this()] { self->close(); });
  }

  void close() {
    if (closed) return;
    closed = true;
    idle_since = 0;
    if (sink) sink->fail();
    error_code ec;
    lowest().socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
    lowest().close();
  }

  void readRequest() {
    if (shared->stopped || closed) return close();
    reader.emplace(shared->limits);
    header_deadline_armed = false;
    if (buffer.size() > 0) return parse();  // a pipelined request is already here
    // Waiting for a request: the idle timeout. Once its first bytes are in, the whole
    // header must follow within the header timeout (slow-header clients).
    idle_since = ++shared->idle_seq;
    lowest().expires_after(timeout());
    readMore();
  }

  void readMore() {
    const std::size_t room = std::min(RequestReader::kReadChunk, buffer.max_size() - buffer.size());
    if (room == 0) return sendError(400, "bad request\n");  // RequestReader refuses before this
    stream.async_read_some(buffer.prepare(room), [self = shared_from_this()](error_code ec, std::size_t n) {
      if (ec) return self->close();  // end of stream, reset, timeout, stop()
      self->buffer.commit(n);
      self->parse();
    });
  }

  void parse() {
    idle_since = 0;
    if (!header_deadline_armed) {
      lowest().expires_after(std::min(timeout(), shared->options.header_timeout));
      header_deadline_armed = true;
    }
    const auto data = buffer.data();
    const RequestReader::Step step =
        reader->feed(std::string_view(static_cast<const char*>(data.data()), data.size()));
    buffer.consume(step.consumed);
    switch (step.event) {
      case RequestReader::Event::kNeedMore:
        return readMore();
      case RequestReader::Event::kHeader:
        return onHeader();
      case RequestReader::Event::kRequest:
        return onRequest();
      case RequestReader::Event::kRefused:
        return sendError(reader->status(), reader->reason());
    }
  }

  void onHeader() {
    lowest().expires_after(timeout());  // the body within the idle timeout
    if (boost::beast::iequals(reader->header()[boost::beast::http::field::expect], "100-continue")) {
      auto cont = std::make_shared<std::string>("HTTP/1.1 100 Continue\r\n\r\n");
      boost::asio::async_write(stream, boost::asio::buffer(*cont),
                               [self = shared_from_this(), cont](error_code wec, std::size_t) {
                                 if (wec) return self->close();
                                 self->lowest().expires_after(self->timeout());
                                 self->parse();
                               });
      return;
    }
    parse();
  }

  // A response to a request we could not read: always closes the connection.
  void sendError(int status, std::string body) {
    shared->countStatus(status);
    namespace bhttp = boost::beast::http;
    auto res = std::make_shared<bhttp::response<bhttp::string_body>>(static_cast<bhttp::status>(status), 11);
    res->set(bhttp::field::content_type, "text/plain; charset=utf-8");
    res->set(bhttp::field::server, "lccd");
    res->keep_alive(false);
    res->body() = std::move(body);
    res->prepare_payload();
    lowest().expires_after(writeTimeout());
    bhttp::async_write(stream, *res, [self = shared_from_this(), res](error_code, std::size_t) { self->close(); });
  }

  void onRequest() {
    BeastRequest msg = reader->release();
    Request req;
    req.remote_ip = remote_ip;
    req.remote_loopback = remote_loopback;
    if (std::string bad = toRequest(msg, &req); !bad.empty()) return sendError(400, std::move(bad));
    const bool keep_alive = msg.keep_alive();
    const bool http10 = msg.version() < 11;
    const bool head = req.method == "HEAD";
    AddressSlots::Slot handler_slot =
        shared->slots->tryAcquire(remote_ip, AddressSlots::kHandler, shared->options.max_handlers_per_ip);
    if (!handler_slot) {
      if (shared->busy) shared->busy->inc();
      return respond(busyResponse("requests"), keep_alive, head, http10);
    }
    auto self = shared_from_this();
    boost::asio::post(shared->workers, [self, req = std::move(req), keep_alive, head, http10,
                                        handler_slot = std::move(handler_slot)]() mutable {
      Response res;
      try {
        res = self->shared->router->dispatch(req);
      } catch (const std::exception& e) {
        spdlog::error("http: handler for {} {} threw: {}", req.method, req.path, e.what());
        res = Response::text(500, "internal error\n");
      } catch (...) {
        spdlog::error("http: handler for {} {} threw", req.method, req.path);
        res = Response::text(500, "internal error\n");
      }
      handler_slot.reset();
      boost::asio::post(self->stream.get_executor(), [self, res = std::move(res), keep_alive, head, http10]() mutable {
        self->respond(std::move(res), keep_alive, head, http10);
      });
    });
  }

  template <class Msg>
  void setCommon(Msg& m, const Response& res, bool keep_alive) {
    namespace bhttp = boost::beast::http;
    m.set(bhttp::field::server, "lccd");
    m.set(bhttp::field::content_type, res.content_type);
    for (const auto& [k, v] : res.headers) m.insert(k, v);
    m.keep_alive(keep_alive && !shared->stopped);
  }

  void respond(Response res, bool keep_alive, bool head, bool http10);
  void afterResponse(error_code ec, bool keep_alive) {
    if (ec || !keep_alive || shared->stopped) return close();
    readRequest();
  }
  void respondStream(Response res, bool keep_alive, bool http10, AddressSlots::Slot stream_slot);
  void runStream(std::function<Status(ByteSink&)> fn, bool keep_alive, AddressSlots::Slot stream_slot);
  void pump();
  void writeSome(std::shared_ptr<std::string> buf, std::size_t offset);
};

}  // namespace lcc::http

#include "http/server_connection_respond.h"
