// robot.h — the robot protocol, BOT-M <-> BOT (docs/protocol.md §4: the contract).
//
// WHO: the BOT-M writes encodeBotmRobot*() and reads with RobotStreamDecoder; a robot
// (core/bot, lcc-bot) writes encodeRobot*() and reads with BotmRobotStreamDecoder.
// Pure codec: no sockets. One decoder per connection.
//
// Stream framing as XMPP: the robot opens <lcc:robot slots=".." name="..">, the BOT-M
// answers <lcc:botm machine="..">, then one child element per message; either side
// closes its root to end the stream. Namespace http://www.lococa.org/1.0/robot, any
// prefix. Unknown elements and attributes are ignored; a missing or malformed
// required attribute is a protocol error (kMalformed).
// Extension (allowed by "unknown attributes are ignored"): a result may carry
// retry_after="SECONDS" from a 429/503.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "lcc/error_codes.h"
#include "lcc/types.h"
#include "proto/botm_link.h"

namespace lcc::proto {

struct RobotHello {  // <lcc:robot slots name frames>
  std::uint32_t slots = 1;
  std::string name;
  std::uint32_t frames = 0;  // frames="1": offers compact frames (link_frames.h); 0: XML only
  friend bool operator==(const RobotHello&, const RobotHello&) = default;
};

struct RobotBotmHello {  // <lcc:botm machine frames>
  std::string machine;
  std::uint32_t frames = 0;  // frames="1": takes the robot's offer; its frames follow
  friend bool operator==(const RobotBotmHello&, const RobotBotmHello&) = default;
};

// BOT-M -> robot: fetch a URL into a file. The message is an lcc::FetchRequest
// (lcc/types.h) with the BOT-M's id: <fetch id url file mime since maxsize redirects
// scope>, i.e. url, path (the absolute final file), expected_mime, if_modified_since,
// max_size, redirects and redirect_prefixes, as on the BOT-M link (botm_link.h) but with
// a file and without md5. expected_md5 and max_response_head are not carried.

// robot -> BOT-M: the outcome of one fetch is an lcc::FetchResult (lcc/types.h) with
// the BOT-M's id; machine and filename are not sent (the BOT-M knows where the file is).

struct RobotEnd {
  friend bool operator==(const RobotEnd&, const RobotEnd&) = default;
};

// What the BOT-M reads from a robot.
using FromRobotMessage = std::variant<RobotHello, FetchResult, LinkPing, LinkPong, RobotEnd>;
// What a robot reads from its BOT-M.
using ToRobotMessage = std::variant<RobotBotmHello, FetchRequest, LinkPing, LinkPong, RobotEnd>;

// ---- the in-process form (net/local_link.h; as botm_link.h says) -----------------
// asOnWire(): the message as the decoder at the other end reads it (a fetch without
// md5, a result without machine and file, retry_after in whole seconds...).
void asOnWire(FromRobotMessage& m);
void asOnWire(ToRobotMessage& m);
using LocalRobotEnd = net::LocalEnd<FromRobotMessage, ToRobotMessage>;      // the robot's end
using LocalBotmRobotEnd = net::LocalEnd<ToRobotMessage, FromRobotMessage>;  // the BOT-M's end
std::string encodeMessage(const FromRobotMessage& m);
std::string encodeMessage(const ToRobotMessage& m);

// Robot side.
std::string encodeRobotOpen(const RobotHello& hello);
std::string encodeRobotResult(const FetchResult& r);
void appendRobotResult(std::string& out, const FetchResult& r);  // the same, appended
std::string encodeRobotClose();  // "</lcc:robot>"
// BOT-M side.
std::string encodeBotmRobotOpen(const RobotBotmHello& hello);
std::string encodeRobotFetch(const FetchRequest& f);
void appendRobotFetch(std::string& out, const FetchRequest& f);  // the same, appended
std::string encodeBotmRobotClose();  // "</lcc:botm>"

// Reads what a robot sends (used by the BOT-M).
class RobotStreamDecoder : public LinkStreamReader {
 public:
  explicit RobotStreamDecoder(XmlLimits limits = linkLimits(), bool frames = true);
  bool feed(std::string_view bytes, std::vector<FromRobotMessage>* out);
};

// Reads what a BOT-M sends (used by a robot).
class BotmRobotStreamDecoder : public LinkStreamReader {
 public:
  explicit BotmRobotStreamDecoder(XmlLimits limits = linkLimits(), bool frames = true);
  bool feed(std::string_view bytes, std::vector<ToRobotMessage>* out);
};

}  // namespace lcc::proto
