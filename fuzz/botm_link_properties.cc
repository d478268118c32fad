// checkBotmLinkProperties (parser_properties.h): the QM <-> BOT-M link codec, both ways.
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "parser_properties.h"
#include "proto/botm_link.h"

namespace lcc::fuzz {
namespace {

std::string encodeOne(const proto::SourceMessage& m) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, proto::LinkSourceHello>) return proto::encodeSourceOpen(v);
        else if constexpr (std::is_same_v<T, FetchRequest>) return proto::encodeFetch(v);
        else if constexpr (std::is_same_v<T, proto::LinkDelete>) return proto::encodeDelete(v);
        else if constexpr (std::is_same_v<T, proto::LinkSweep>) return proto::encodeSweep(v);
        else if constexpr (std::is_same_v<T, proto::LinkPing>) return proto::encodeLinkPing();
        else if constexpr (std::is_same_v<T, proto::LinkPong>) return proto::encodeLinkPong();
        else return proto::encodeSourceClose();
      },
      m);
}

std::string encodeOne(const proto::BotmMessage& m) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, proto::LinkBotmHello>) return proto::encodeBotmOpen(v);
        else if constexpr (std::is_same_v<T, FetchResult>) return proto::encodeResult(v);
        else if constexpr (std::is_same_v<T, proto::LinkDeleted>) return proto::encodeDeleted(v);
        else if constexpr (std::is_same_v<T, proto::LinkCapacity>) return proto::encodeCapacity(v);
        else if constexpr (std::is_same_v<T, proto::LinkMachines>) return proto::encodeMachines(v);
        else if constexpr (std::is_same_v<T, proto::LinkFile>) return proto::encodeFile(v);
        else if constexpr (std::is_same_v<T, proto::LinkSwept>) return proto::encodeSwept(v);
        else if constexpr (std::is_same_v<T, proto::LinkPing>) return proto::encodeLinkPing();
        else if constexpr (std::is_same_v<T, proto::LinkPong>) return proto::encodeLinkPong();
        else return proto::encodeBotmClose();
      },
      m);
}

// Decodes `data` (in pieces of 13), then encodes what came out, decodes that and
// encodes it again: the two encodings must be equal (what the decoder accepts, the
// encoder writes so that the decoder reads the same back).
template <typename Decoder, typename Message>
std::string roundTrip(std::string_view data, const char* side) {
  Decoder dec;
  std::vector<Message> got;
  for (std::size_t at = 0; at < data.size() && dec.feed(data.substr(at, 13), &got);) at += 13;
  if (dec.failed() && dec.errorMessage().empty()) return std::string(side) + ": refused without a message";
  std::string first;
  for (const auto& m : got) first += encodeOne(m);
  Decoder again;
  std::vector<Message> back;
  if (!again.feed(first, &back)) return std::string(side) + ": its own encoding is refused: " + again.errorMessage();
  std::string second;
  for (const auto& m : back) second += encodeOne(m);
  if (second != first) return std::string(side) + ": encoded, decoded and encoded again differs";
  return "";
}

}  // namespace

std::string checkBotmLinkProperties(std::string_view data) {
  std::string why = roundTrip<proto::SourceStreamDecoder, proto::SourceMessage>(data, "source stream");
  if (!why.empty()) return why;
  return roundTrip<proto::BotmStreamDecoder, proto::BotmMessage>(data, "BOT-M stream");
}

}  // namespace lcc::fuzz
