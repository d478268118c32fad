// request_reader.h — the rules for reading one HTTP/1.1 request, without sockets: Beast's
// request_parser with our limits, plus the framing checks Beast leaves to us. The server
// (server.cc) feeds it the bytes of a connection; the fuzz target http_request_fuzz feeds
// it anything.
//
// Every part of a request is bounded: the request line with the header fields, each
// chunk-size line (with its extensions) and the trailer section by `max_header` (the
// unparsed bytes a caller must keep: bufferLimit()), the body by `max_body` (Beast
// consumes body bytes as they come, so a large body never waits in the buffer).
// Framing (RFC 9112 §6): the only transfer coding is a single `chunked`; any other
// Transfer-Encoding, or one together with Content-Length, is refused (400), so a
// request hidden in a body can never be read as the next request.
// Nothing thrown while parsing leaves feed(): Beast's basic_fields throws
// std::length_error for a field value over 64 KiB (a trailer, or a header under a large
// max_header); that becomes 431.
// THREADS: one thread at a time.
#pragma once

#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace lcc::http {

struct RequestLimits {
  std::size_t max_header = 16 * 1024;  // request line + fields; one chunk line; the trailer section
  std::size_t max_body = 1 << 20;      // the body (Content-Length or the chunks' sum)
};

using BeastRequest = boost::beast::http::request<boost::beast::http::string_body>;

class RequestReader {
 public:
  enum class Event {
    kNeedMore,  // read more bytes (the caller keeps what was not consumed)
    kHeader,    // the header is complete and acceptable (once per request); feed again for the body
    kRequest,   // the request is complete: release() it
    kRefused,   // status() and reason(): answer and close the connection
  };
  struct Step {
    Event event;
    std::size_t consumed;  // bytes of the input used; drop them before the next feed()
  };

  explicit RequestReader(RequestLimits limits);

  // Parses from `unparsed`: the bytes received and not consumed yet.
  Step feed(std::string_view unparsed);

  // After kHeader: the request line and the header fields.
  const BeastRequest& header() const { return parser_.get(); }
  // After kRequest.
  BeastRequest release() { return parser_.release(); }
  // After kRefused: 400, 413 or 431, and why (one line for the client).
  int status() const { return status_; }
  const std::string& reason() const { return reason_; }

  // The most bytes a connection needs to hold unparsed: a read that would go past it is
  // refused by feed() before it happens (the caller reads at most the rest).
  static std::size_t bufferLimit(const RequestLimits& limits) { return limits.max_header + kReadChunk; }
  static constexpr std::size_t kReadChunk = 16 * 1024;

 private:
  Step refuse(int status, std::string reason, std::size_t consumed);
  Step afterHeader(std::size_t consumed);
  Step afterError(boost::beast::error_code ec, std::size_t consumed, std::size_t window, std::size_t budget);

  RequestLimits limits_;
  boost::beast::http::request_parser<boost::beast::http::string_body> parser_;
  bool header_seen_ = false;
  std::size_t header_used_ = 0;  // bytes of the header consumed so far
  int status_ = 0;
  std::string reason_;
};

// One request read from `bytes` given in pieces of `piece` bytes (0: at once), as a
// connection would receive them: the request, or the refusal's status and reason
// (status 0 with no request: the bytes end before the request does).
struct ReadOutcome {
  std::optional<BeastRequest> request;
  int status = 0;
  std::string reason;
  std::size_t consumed = 0;  // bytes of `bytes` the request took (the rest: a pipelined one)
};
ReadOutcome readRequest(std::string_view bytes, const RequestLimits& limits, std::size_t piece = 0);

}  // namespace lcc::http
