// checkCpUnsProperties (parser_properties.h): the CP -> UNS request decoder.
#include <string>
#include <vector>

#include "parser_properties.h"
#include "proto/cp_uns.h"

namespace lcc::fuzz {
namespace {

// Every event as one line; validateUrl's verdict on each <url> goes with it.
class Recorder : public proto::CpRequestHandler {
 public:
  std::vector<std::string> events;
  std::string urlprefix;
  std::string silent_refusal;  // a <url> validateUrl() refused without a message

  void onInit(std::string_view id, std::string_view password) override {
    events.push_back("init " + std::string(id) + " " + std::string(password));
  }
  void onSetBegin(std::string_view kind, std::string_view prefix) override {
    urlprefix = std::string(prefix);
    events.push_back("set " + std::string(kind) + " " + urlprefix);
  }
  void onUrl(const proto::UrlAttrs& attrs) override {
    proto::UrlRules rules;
    rules.accept_mime = {"text/*", "application/pdf"};
    rules.prefixes = {"http://example.com/", "https://example.org/a/"};
    const proto::UrlVerdict v = proto::validateUrl(attrs, urlprefix, 7, rules);
    std::string line = "url " + std::to_string(static_cast<int>(v.code));
    for (const auto& [k, val] : attrs) line += " " + k + "=" + val;
    if (v.code == ErrorCode::kNone) line += " -> " + v.notice.key.url + " " + v.notice.tod;
    else if (v.message.empty() && silent_refusal.empty()) silent_refusal = line;
    events.push_back(line);
  }
  void onSetEnd() override { events.push_back("end"); }
  void onUnknownDocument(std::string_view ns, std::string_view local) override {
    events.push_back("unknown " + std::string(ns) + " " + std::string(local));
  }
};

struct Outcome {
  std::vector<std::string> events;
  bool failed = false;
  std::string error;
  std::string silent_refusal;
};

Outcome decodeInPieces(std::string_view data, std::size_t piece) {
  Recorder rec;
  proto::XmlLimits limits;
  limits.max_value_length = 512;
  limits.max_elements = 5000;
  proto::CpRequestDecoder dec(rec, limits);
  for (std::size_t at = 0; at < data.size() && !dec.failed(); at += piece) {
    std::string_view chunk = data.substr(at, piece);
    // Between documents the decoder stops: the rest is fed again (a session goes on).
    while (!chunk.empty() && !dec.failed()) {
      const std::size_t used = dec.feed(chunk.data(), chunk.size());
      if (used == 0) return {rec.events, true, "the decoder took no byte", rec.silent_refusal};
      chunk.remove_prefix(used);
    }
  }
  return {rec.events, dec.failed(), dec.failed() ? dec.errorMessage() : "", rec.silent_refusal};
}

}  // namespace

std::string checkCpUnsProperties(std::string_view data) {
  const Outcome whole = decodeInPieces(data, data.empty() ? 1 : data.size());
  if (whole.failed && whole.error.empty()) return "refused without a message";
  if (!whole.silent_refusal.empty()) return "validateUrl refused without a message: " + whole.silent_refusal;
  for (std::size_t piece : {1, 7}) {
    const Outcome split = decodeInPieces(data, piece);
    if (split.failed != whole.failed || split.events != whole.events) {
      return "fed in pieces of " + std::to_string(piece) + " differs from whole (" + whole.error + " / " +
             split.error + ", " + std::to_string(whole.events.size()) + " / " + std::to_string(split.events.size()) +
             " events)";
    }
  }
  proto::ReplyDecoder replies;
  std::size_t n = replies.feed(data).size();
  (void)replies.takeStreamedErrors();
  if (replies.failed() && replies.errorMessage().empty()) return "reply decoder refused without a message";
  return n > data.size() ? "more replies than bytes" : "";
}

}  // namespace lcc::fuzz
