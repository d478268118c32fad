// checkCuCursorProperties (parser_properties.h): the merged CU cursor's decoder.
#include <string>

#include "parser_properties.h"
#include "proto/cu_cursor.h"

namespace lcc::fuzz {
namespace {

// A token is accepted only in its one canonical form, with valid sorted sources, and
// a refusal is InvalidArgument with a message.
std::string checkToken(std::string_view token) {
  auto d = proto::decodeCuCursor(token);
  if (!d.isOk()) {
    if (d.status().code() != StatusCode::kInvalidArgument) return "a refusal that is not InvalidArgument";
    if (d.status().message().empty()) return "a refusal without a message";
    return "";
  }
  if (proto::encodeCuCursor(*d) != token) return "an accepted token is not the encoding of what it decodes to";
  if (d->parts().size() > proto::kCuCursorMaxSources) return "more sources than the bound";
  for (std::size_t i = 0; i < d->parts().size(); ++i) {
    if (!proto::validCuSourceId(d->parts()[i].source)) return "an invalid source id was accepted";
    if (i > 0 && !(d->parts()[i - 1].source < d->parts()[i].source)) return "sources not sorted and unique";
  }
  return "";
}

}  // namespace

std::string checkCuCursorProperties(std::string_view data) {
  if (std::string why = checkToken(data); !why.empty()) return why;
  // The bytes as the base64url text of a token, so that the fuzzer reaches the payload.
  return checkToken(std::string(proto::kCuCursorPrefix) + std::string(data));
}

}  // namespace lcc::fuzz
