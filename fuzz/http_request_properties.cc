// checkHttpRequestProperties (parser_properties.h): the HTTP server's request reader
// (core/http/request_reader.h), fed the bytes whole and in pieces as a connection
// would receive them.
#include <boost/beast/core/string.hpp>
#include <string>

#include "http/request_reader.h"
#include "parser_properties.h"

namespace lcc::fuzz {

namespace {

namespace bhttp = boost::beast::http;

std::string describe(const http::ReadOutcome& o) {
  std::string s = std::to_string(o.status) + " consumed " + std::to_string(o.consumed);
  if (o.request) {
    s += " " + std::string(o.request->method_string()) + " " + std::string(o.request->target()) + " body " +
         std::to_string(o.request->body().size());
  }
  return s;
}

bool sameOutcome(const http::ReadOutcome& a, const http::ReadOutcome& b) {
  // A refusal may come after a different count of bytes (Beast takes the request line
  // apart from the fields when they arrive apart), and a malformed header that arrives
  // in pieces may be seen only at its end: Beast then waits for the end ("\r\n\r\n")
  // where the whole bytes were refused at once. Waiting is bounded by max_header and
  // the header timeout; what is never allowed is a request on one side and a refusal
  // on the other, two different requests, or two different refusals.
  const bool a_open = a.status == 0 && !a.request;
  const bool b_open = b.status == 0 && !b.request;
  if (a_open != b_open) return a_open ? b.status != 0 : a.status != 0;
  // For the same reason a header both malformed and over max_header is 400 whole and
  // may be 431 in pieces (the limit is reached before the fault is looked at).
  const bool malformed_or_long = (a.status == 400 && b.status == 431) || (a.status == 431 && b.status == 400);
  if (malformed_or_long) return true;
  if (a.status != b.status || a.request.has_value() != b.request.has_value()) return false;
  if (!a.request) return true;
  if (a.consumed != b.consumed) return false;
  return a.request->method_string() == b.request->method_string() && a.request->target() == b.request->target() &&
         a.request->body() == b.request->body();
}

// An accepted request keeps the limits and the framing rules.
std::string checkAccepted(const http::ReadOutcome& o, const http::RequestLimits& limits, std::size_t size) {
  if (o.consumed > size) return "consumed more than it was given";
  if (!o.request) {
    if (o.status == 0) return "";  // the bytes ended first
    if (o.status != 400 && o.status != 413 && o.status != 431) return "refused with " + std::to_string(o.status);
    return "";
  }
  if (o.status != 0) return "a request and a refusal";
  const auto& req = *o.request;
  if (req.body().size() > limits.max_body) return "a body over max_body";
  std::size_t te = 0;
  for (auto [it, end] = req.equal_range(bhttp::field::transfer_encoding); it != end; ++it) {
    ++te;
    std::string v(it->value());
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.pop_back();
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.erase(0, 1);
    if (!boost::beast::iequals(v, "chunked")) return "accepted Transfer-Encoding: " + v;
  }
  if (te > 1) return "accepted two Transfer-Encoding fields";
  if (te == 1 && req.count(bhttp::field::content_length) > 0) return "accepted Transfer-Encoding with Content-Length";
  return "";
}

}  // namespace

std::string checkHttpRequestProperties(std::string_view data) {
  // Small limits, so that the fuzzer reaches them.
  const http::RequestLimits limits{1024, 4096};
  const http::ReadOutcome whole = http::readRequest(data, limits);
  if (std::string why = checkAccepted(whole, limits, data.size()); !why.empty()) return why;
  for (std::size_t piece : {std::size_t{1}, std::size_t{7}, std::size_t{1500}}) {
    const http::ReadOutcome parts = http::readRequest(data, limits, piece);
    if (!sameOutcome(whole, parts)) {
      return "whole: " + describe(whole) + "; in pieces of " + std::to_string(piece) + ": " + describe(parts);
    }
  }
  // What follows a request is read as the next one (pipelining), with the same rules.
  if (whole.request && whole.consumed < data.size()) {
    const http::ReadOutcome next = http::readRequest(data.substr(whole.consumed), limits);
    if (std::string why = checkAccepted(next, limits, data.size() - whole.consumed); !why.empty()) {
      return "pipelined: " + why;
    }
  }
  return "";
}

}  // namespace lcc::fuzz
