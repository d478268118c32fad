// checkLinkFramesProperties and checkRobotFramesProperties (parser_properties.h): the
// compact frames of the BOT-M link and of the robot protocol (proto/link_frames.h),
// both sides each. The fuzzer's bytes follow a hello and the switch to frames.
#include <string>
#include <vector>

#include "parser_properties.h"
#include "proto/link_frames.h"

namespace lcc::fuzz {
namespace {

struct Outcome {
  bool failed = false;
  std::string error;
  bool ended = false;
  std::size_t count = 0;
  std::string frames;  // what was decoded, as frames again
};

// Feeds `prefix` then `data` in pieces of `chunk`; what came out, encoded as frames.
template <typename Decoder, typename Message>
Outcome run(const std::string& prefix, std::string_view data, std::size_t chunk) {
  Decoder dec;
  std::vector<Message> got;
  dec.feed(prefix, &got);
  for (std::size_t at = 0; at < data.size() && dec.feed(data.substr(at, chunk), &got); at += chunk) {
  }
  Outcome o;
  o.failed = dec.failed();
  o.error = dec.errorMessage();
  o.ended = dec.ended();
  o.count = got.size();
  if (!got.empty()) got.erase(got.begin());  // the hello: XML, not a frame
  o.frames = proto::encodeMessages(got, proto::LinkForm::kFrames);
  return o;
}

// The properties of one side: the same messages and verdict whole and in pieces of 1
// and 13; a refusal has a message; what was decoded, encoded as frames and decoded
// again, gives the same frames (the encoder writes what the decoder reads back).
template <typename Decoder, typename Message>
std::string check(const std::string& hello, std::string_view data, const char* side) {
  const std::string prefix = hello + proto::encodeFramesSwitch();
  const Outcome whole = run<Decoder, Message>(prefix, data, data.size() + 1);
  for (std::size_t chunk : {std::size_t{1}, std::size_t{13}}) {
    const Outcome part = run<Decoder, Message>(prefix, data, chunk);
    if (part.failed != whole.failed || part.count != whole.count || part.frames != whole.frames ||
        part.ended != whole.ended) {
      return std::string(side) + ": pieces of " + std::to_string(chunk) + " read differently from the whole";
    }
  }
  if (whole.failed && whole.error.empty()) return std::string(side) + ": refused without a message";
  const Outcome again = run<Decoder, Message>(prefix, whole.frames, whole.frames.size() + 1);
  if (again.failed) return std::string(side) + ": its own frames are refused: " + again.error;
  if (again.frames != whole.frames) return std::string(side) + ": decoded, encoded and decoded again differs";
  return "";
}

}  // namespace

std::string checkLinkFramesProperties(std::string_view data) {
  std::string why = check<proto::SourceStreamDecoder, proto::SourceMessage>(proto::encodeSourceOpen({"qm", 1}), data,
                                                                            "source frames");
  if (!why.empty()) return why;
  return check<proto::BotmStreamDecoder, proto::BotmMessage>(proto::encodeBotmOpen({"m1", 4, "", 1}), data,
                                                             "BOT-M frames");
}

std::string checkRobotFramesProperties(std::string_view data) {
  std::string why = check<proto::BotmRobotStreamDecoder, proto::ToRobotMessage>(proto::encodeBotmRobotOpen({"m1", 1}),
                                                                                data, "BOT-M-to-robot frames");
  if (!why.empty()) return why;
  return check<proto::RobotStreamDecoder, proto::FromRobotMessage>(proto::encodeRobotOpen({4, "r", 1}), data,
                                                                   "robot-to-BOT-M frames");
}

}  // namespace lcc::fuzz
