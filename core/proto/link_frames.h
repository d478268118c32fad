// link_frames.h — the messages of the BOT-M link (botm_link.h) and of the robot
// protocol (robot.h) as compact frames (frame_codec.h; docs/internal-protocols.md §4).
//
// WHO: the link stream readers (LinkStreamReader) switch to these after the peer's
// <frames v="1"/>; the writers of the QM, the BOT-M and the robot use
// encodeMessages(..., LinkForm::kFrames) once the link agreed on frames.
// A frame carries what the XML element carries, no more (the same facts:
// tests/proto/link_frames_test.cc checks decode(encode(m)) == asOnWire(m)). Fetches
// and results travel in batches: one frame holds the consecutive ones of a write.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "proto/botm_link.h"
#include "proto/frame_codec.h"
#include "proto/robot.h"

namespace lcc::proto {

// How a link writes after its hellos: the XML stream, or frames.
enum class LinkForm : std::uint8_t { kXml, kFrames };

// The switch: the writer sends this child element, and its next byte starts a frame.
std::string encodeFramesSwitch();
// What a hello's frames="N" offers, as the version both sides speak (0: XML only).
std::uint32_t agreedFrames(std::uint64_t offered, bool frames_enabled);

// The bytes of messages on a link in `form`: consecutive fetches or results go in one
// batch frame (a new one past kBatchBytes or FrameLimits::max_batch). Hellos are
// always XML (they come before the switch).
inline constexpr std::size_t kBatchBytes = 256 * 1024;
std::string encodeMessages(const std::vector<SourceMessage>& ms, LinkForm form);
std::string encodeMessages(const std::vector<BotmMessage>& ms, LinkForm form);
std::string encodeMessages(const std::vector<ToRobotMessage>& ms, LinkForm form);
std::string encodeMessages(const std::vector<FromRobotMessage>& ms, LinkForm form);
std::string encodeMessage(const SourceMessage& m, LinkForm form);
std::string encodeMessage(const BotmMessage& m, LinkForm form);
std::string encodeMessage(const ToRobotMessage& m, LinkForm form);
std::string encodeMessage(const FromRobotMessage& m, LinkForm form);
// A batch of fetches or results in `form` (the robot's and the BOT-M's hot paths).
void appendFetches(std::string& out, const std::vector<FetchRequest>& fs, detail::FetchWire wire, LinkForm form);
void appendResults(std::string& out, const std::vector<FetchResult>& rs, bool with_file, LinkForm form);

// One frame's messages, appended to `out`; false when the payload is malformed
// (r.why()). An unknown type appends nothing. Ping, pong and end are the reader's.
bool decodeFrame(FrameType type, FieldReader& r, std::vector<SourceMessage>* out);
bool decodeFrame(FrameType type, FieldReader& r, std::vector<BotmMessage>* out);
bool decodeFrame(FrameType type, FieldReader& r, std::vector<ToRobotMessage>* out);
bool decodeFrame(FrameType type, FieldReader& r, std::vector<FromRobotMessage>* out);

}  // namespace lcc::proto
