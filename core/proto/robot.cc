#include "proto/robot.h"
#include "proto/codec_util.h"
#include "proto/link_frames.h"


namespace lcc::proto {

namespace {

using detail::AttrParser;
using detail::RawElement;
using detail::appendResult;
using detail::decodeResult;

std::string openRoot(std::string_view root) {
  std::string out = "<lcc:";
  out.append(root);
  out.append(" xmlns:lcc=\"");
  out.append(kRobotNs);
  out.push_back('"');
  return out;
}

}  // namespace

std::string encodeRobotOpen(const RobotHello& hello) {
  std::string out = openRoot("robot");
  appendAttr(out, "slots", std::to_string(hello.slots));
  if (!hello.name.empty()) appendAttr(out, "name", hello.name);
  if (hello.frames != 0) appendAttr(out, "frames", std::to_string(hello.frames));
  out.append(">\n");
  return out;
}

std::string encodeRobotResult(const FetchResult& r) {
  std::string out;
  appendRobotResult(out, r);
  return out;
}

void appendRobotResult(std::string& out, const FetchResult& r) { appendResult(out, r, false); }

std::string encodeRobotClose() { return "</lcc:robot>\n"; }

std::string encodeBotmRobotOpen(const RobotBotmHello& hello) {
  std::string out = openRoot("botm");
  appendAttr(out, "machine", hello.machine);
  if (hello.frames != 0) appendAttr(out, "frames", std::to_string(hello.frames));
  out.append(">\n");
  return out;
}

std::string encodeRobotFetch(const FetchRequest& f) {
  std::string out;
  appendRobotFetch(out, f);
  return out;
}

void appendRobotFetch(std::string& out, const FetchRequest& f) { detail::appendFetch(out, f, detail::FetchWire::kRobot); }

std::string encodeBotmRobotClose() { return "</lcc:botm>\n"; }

RobotStreamDecoder::RobotStreamDecoder(XmlLimits limits, bool frames)
    : LinkStreamReader(limits, kRobotNs, "robot", frames) {}

bool RobotStreamDecoder::feed(std::string_view bytes, std::vector<FromRobotMessage>* out) {
  auto& dec = dec_;
  return feedStream<RobotEnd>(
      bytes, out,
      [&](bool is_root, const RawElement& el) {
        AttrParser p{dec, el};
        if (is_root) {
          RobotHello h;
          std::uint64_t slots = p.reqU64("slots");
          if (p.ok && (slots == 0 || slots > 65536)) p.bad("slots", "must be 1..65536");
          h.slots = static_cast<std::uint32_t>(slots);
          h.name = p.str("name");
          h.frames = agreedFrames(p.optU64("frames"), true);
          if (p.ok) out->push_back(std::move(h));
          return;
        }
        if (detail::readKeepAlive(el, out)) return;
        if (el.name == "result") {
          FetchResult r = decodeResult(p, el, false);
          if (p.ok) out->push_back(std::move(r));
        }
      },
      [&](FrameType type, FieldReader& r) { return decodeFrame(type, r, out); });
}

BotmRobotStreamDecoder::BotmRobotStreamDecoder(XmlLimits limits, bool frames)
    : LinkStreamReader(limits, kRobotNs, "botm", frames) {}

bool BotmRobotStreamDecoder::feed(std::string_view bytes, std::vector<ToRobotMessage>* out) {
  auto& dec = dec_;
  return feedStream<RobotEnd>(
      bytes, out,
      [&](bool is_root, const RawElement& el) {
        AttrParser p{dec, el};
        if (is_root) {
          out->push_back(RobotBotmHello{p.str("machine"), agreedFrames(p.optU64("frames"), true)});
          return;
        }
        if (detail::readKeepAlive(el, out)) return;
        if (el.name == "fetch") {
          FetchRequest f = detail::decodeFetch(p, detail::FetchWire::kRobot);
          if (p.ok) out->push_back(std::move(f));
        }
      },
      [&](FrameType type, FieldReader& r) { return decodeFrame(type, r, out); });
}

void asOnWire(FromRobotMessage& m) {
  if (auto* r = std::get_if<FetchResult>(&m)) *r = detail::resultAsOnWire(std::move(*r), false);
}

void asOnWire(ToRobotMessage& m) {
  if (auto* f = std::get_if<FetchRequest>(&m)) *f = detail::fetchAsOnWire(std::move(*f), detail::FetchWire::kRobot);
}

std::string encodeMessage(const FromRobotMessage& m) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, RobotHello>) return encodeRobotOpen(v);
        if constexpr (std::is_same_v<T, FetchResult>) return encodeRobotResult(v);
        if constexpr (std::is_same_v<T, LinkPing>) return encodeLinkPing(v);
        if constexpr (std::is_same_v<T, LinkPong>) return encodeLinkPong();
        if constexpr (std::is_same_v<T, RobotEnd>) return encodeRobotClose();
      },
      m);
}

std::string encodeMessage(const ToRobotMessage& m) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, RobotBotmHello>) return encodeBotmRobotOpen(v);
        if constexpr (std::is_same_v<T, FetchRequest>) return encodeRobotFetch(v);
        if constexpr (std::is_same_v<T, LinkPing>) return encodeLinkPing(v);
        if constexpr (std::is_same_v<T, LinkPong>) return encodeLinkPong();
        if constexpr (std::is_same_v<T, RobotEnd>) return encodeBotmRobotClose();
      },
      m);
}

}  // namespace lcc::proto
