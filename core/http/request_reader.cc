// request_reader.cc — see request_reader.h.
#include "http/request_reader.h"

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <exception>
#include <new>
#include <stdexcept>

namespace lcc::http {

namespace bhttp = boost::beast::http;

namespace {

std::string_view trimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// RFC 9112 §6.3: a Transfer-Encoding we cannot frame by is refused, and one together
// with Content-Length too. We implement no transfer coding but a single `chunked`.
// "" when the framing is acceptable, else why not.
std::string framingProblem(const BeastRequest& req) {
  std::size_t te_fields = 0;
  bool te_ok = true;
  for (auto [it, end] = req.equal_range(bhttp::field::transfer_encoding); it != end; ++it) {
    ++te_fields;
    const auto v = it->value();
    const std::string_view coding = trimOws(std::string_view(v.data(), v.size()));
    if (!boost::beast::iequals(boost::beast::string_view(coding.data(), coding.size()), "chunked")) te_ok = false;
  }
  if (te_fields == 0) return "";
  if (te_fields > 1 || !te_ok) return "unsupported transfer encoding\n";
  if (req.count(bhttp::field::content_length) > 0) return "both transfer encoding and content length\n";
  if (req.version() < 11) return "transfer encoding in an HTTP/1.0 request\n";
  return "";
}

}  // namespace

RequestReader::RequestReader(RequestLimits limits) : limits_(limits) {
  parser_.header_limit(static_cast<std::uint32_t>(std::min<std::size_t>(limits_.max_header, UINT32_MAX)));
  parser_.body_limit(limits_.max_body);
  parser_.eager(false);  // stop after the header: the framing is checked before any body byte
}

RequestReader::Step RequestReader::refuse(int status, std::string reason, std::size_t consumed) {
  status_ = status;
  reason_ = std::move(reason);
  return {Event::kRefused, consumed};
}

RequestReader::Step RequestReader::afterHeader(std::size_t consumed) {
  header_seen_ = true;
  const std::string problem = framingProblem(parser_.get());
  if (!problem.empty()) return refuse(400, problem, consumed);
  if (auto len = parser_.content_length(); len && *len > limits_.max_body) {
    return refuse(413, "request body too large\n", consumed);
  }
  return {Event::kHeader, consumed};
}

RequestReader::Step RequestReader::afterError(boost::beast::error_code ec, std::size_t consumed, std::size_t window,
                                              std::size_t budget) {
  if (ec == bhttp::error::need_more) {
    // What waits unparsed is one element Beast needs whole: the request line and
    // fields, a chunk-size line, or the last chunk with the trailer section. Each must
    // fit in max_header (the header counted from its first byte).
    if (window < budget) return {Event::kNeedMore, consumed};
    if (!header_seen_) return refuse(431, "request header fields too large\n", consumed);
    return refuse(400, "chunk line or trailer section too long\n", consumed);
  }
  if (ec == bhttp::error::header_limit) return refuse(431, "request header fields too large\n", consumed);
  if (ec == bhttp::error::body_limit) return refuse(413, "request body too large\n", consumed);
  return refuse(400, "bad request (" + ec.message() + ")\n", consumed);
}

RequestReader::Step RequestReader::feed(std::string_view unparsed) {
  if (status_ != 0) return {Event::kRefused, 0};
  std::size_t used = 0;
  int idle_turns = 0;  // puts that used nothing without an error: Beast changed state
  while (!parser_.is_done()) {
    if (used == unparsed.size()) return {Event::kNeedMore, used};
    // Beast gets at most max_header bytes at a time, so an element it needs whole
    // (a line, the trailer) is bounded the same however the bytes arrived; body bytes
    // are consumed as they come, so this does not bound a body.
    // The header's bytes count from the request line on, whether Beast took the line
    // apart from the fields or with them.
    const std::size_t budget = header_seen_ ? limits_.max_header : limits_.max_header - header_used_;
    const std::size_t window = std::min(unparsed.size() - used, budget);
    // Beast takes a chunk's size off its body limit when it reads the chunk line, and
    // again each time it retries a line whose extension was not complete: a chunk line
    // arriving a byte at a time would use the limit up (413 where the whole bytes give
    // 400). The limit is set again before each put from the body actually read.
    if (header_seen_) parser_.body_limit(limits_.max_body - std::min(limits_.max_body, parser_.get().body().size()));
    boost::beast::error_code ec;
    std::size_t n = 0;
    try {
      n = parser_.put(boost::asio::const_buffer(unparsed.data() + used, window), ec);
    } catch (const std::length_error&) {  // basic_fields: a field name or value over 64 KiB
      return refuse(431, "request header field too large\n", used);
    } catch (const std::bad_alloc&) {
      return refuse(413, "request too large\n", used);
    } catch (const std::exception& e) {
      return refuse(400, std::string("bad request (") + e.what() + ")\n", used);
    }
    used += n;
    if (!header_seen_) header_used_ += n;
    if (ec) return afterError(ec, used, window, budget);
    if (!header_seen_ && parser_.is_header_done()) return afterHeader(used);
    idle_turns = n == 0 ? idle_turns + 1 : 0;
    if (idle_turns > 2) return {Event::kNeedMore, used};
  }
  return {Event::kRequest, used};
}

ReadOutcome readRequest(std::string_view bytes, const RequestLimits& limits, std::size_t piece) {
  ReadOutcome out;
  RequestReader reader(limits);
  std::size_t received = piece == 0 ? bytes.size() : std::min(piece, bytes.size());
  std::size_t start = 0;  // bytes consumed so far
  const std::size_t cap = RequestReader::bufferLimit(limits);
  for (;;) {
    // A connection holds at most bufferLimit() unparsed bytes.
    received = std::min(received, start + cap);
    RequestReader::Step step = reader.feed(bytes.substr(start, received - start));
    start += step.consumed;
    switch (step.event) {
      case RequestReader::Event::kHeader:
        continue;
      case RequestReader::Event::kRequest:
        out.request = reader.release();
        out.consumed = start;
        return out;
      case RequestReader::Event::kRefused:
        out.status = reader.status();
        out.reason = reader.reason();
        out.consumed = start;
        return out;
      case RequestReader::Event::kNeedMore:
        if (received == bytes.size()) {
          out.consumed = start;
          return out;  // the bytes end before the request
        }
        received = piece == 0 ? bytes.size() : std::min(bytes.size(), received + piece);
        break;
    }
  }
}

}  // namespace lcc::http
