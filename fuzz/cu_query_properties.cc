// checkCuQueryProperties (parser_properties.h): the CU query parsers.
#include <map>
#include <string>

#include "parser_properties.h"
#include "proto/cu_query.h"

namespace lcc::fuzz {
namespace {

// An accepted query is valid, and its formatted document is accepted and formats to
// itself again. (Not "parses back equal": a prefix of raw bytes that are not URL
// characters, which GET parameters may carry, is written percent-encoded.)
std::string checkAccepted(const proto::CuQuery& q, const char* how) {
  if (auto bad = proto::validateCuQuery(q)) return std::string(how) + ": accepted but invalid: " + bad->message;
  proto::CuQueryError err;
  const std::string doc = proto::formatCuQueryXml(q);
  auto again = proto::parseCuQueryXml(doc, &err);
  if (!again.isOk()) return std::string(how) + ": its formatted document is refused: " + err.message;
  if (proto::formatCuQueryXml(*again) != doc) return std::string(how) + ": formatted and parsed again, it changed";
  return "";
}

std::multimap<std::string, std::string> asParams(std::string_view data) {
  std::multimap<std::string, std::string> params;
  while (!data.empty()) {
    const std::size_t amp = data.find('&');
    std::string_view pair = data.substr(0, amp);
    const std::size_t eq = pair.find('=');
    params.emplace(std::string(pair.substr(0, eq)), eq == std::string_view::npos ? "" : std::string(pair.substr(eq + 1)));
    if (amp == std::string_view::npos) break;
    data.remove_prefix(amp + 1);
  }
  return params;
}

}  // namespace

std::string checkCuQueryProperties(std::string_view data) {
  proto::CuQueryError whole_err;
  auto whole = proto::parseCuQueryXml(data, &whole_err);
  proto::CuQueryParser parser(1 << 16);
  proto::CuQueryParser::State st = proto::CuQueryParser::State::kNeedMore;
  for (std::size_t at = 0; at < data.size() && st == proto::CuQueryParser::State::kNeedMore; at += 5) {
    st = parser.feed(data.substr(at, 5));
  }
  if (st == proto::CuQueryParser::State::kNeedMore) st = parser.endOfInput();
  if (st == proto::CuQueryParser::State::kDone) {
    if (std::string why = checkAccepted(parser.query(), "incremental"); !why.empty()) return why;
    if (whole.isOk() && !(*whole == parser.query())) return "the incremental parser and parseCuQueryXml disagree";
  } else if (parser.error().message.empty()) {
    return "incremental: refused without a message";
  }
  if (whole.isOk()) {
    if (std::string why = checkAccepted(*whole, "whole"); !why.empty()) return why;
  } else if (whole_err.message.empty()) {
    return "whole: refused without a message";
  }
  proto::CuQueryError param_err;
  auto from_params = proto::parseCuQueryParams(asParams(data), &param_err);
  if (from_params) return checkAccepted(*from_params, "GET parameters");
  return param_err.message.empty() ? "GET parameters: refused without a message" : "";
}

}  // namespace lcc::fuzz
