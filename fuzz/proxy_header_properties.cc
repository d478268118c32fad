// checkProxyHeaderProperties (parser_properties.h): the PROXY v2 header's decoder.
#include <string>

#include "parser_properties.h"
#include "proto/proxy_header.h"

namespace lcc::fuzz {

std::string checkProxyHeaderProperties(std::string_view data) {
  using State = proto::ProxyDecode::State;
  const proto::ProxyDecode whole = proto::decodeProxyV2(data);
  // Byte by byte: "need more" until the verdict the whole bytes give, never another one.
  for (std::size_t n = 0; n < data.size(); ++n) {
    const proto::ProxyDecode part = proto::decodeProxyV2(data.substr(0, n));
    if (part.state == State::kNeedMore) continue;
    if (part.state != whole.state || part.size != whole.size) return "a prefix gave another verdict than the whole";
    break;
  }
  switch (whole.state) {
    case State::kNotProxy:
      if (data.substr(0, proto::kProxyV2Signature.size()) == proto::kProxyV2Signature) return "the signature not seen";
      return "";
    case State::kNeedMore:
      if (data.size() >= proto::kProxyV2MaxSize) return "waits for more than the bound";
      return "";
    case State::kRefused:
      return whole.why.empty() ? "a refusal without a reason" : "";
    case State::kDone:
      break;
  }
  if (whole.size < proto::kProxyV2Fixed || whole.size > proto::kProxyV2MaxSize || whole.size > data.size()) {
    return "a header size out of bounds";
  }
  if (whole.header.local) return "";
  // What it names, written again, reads back the same.
  const proto::ProxyDecode again = proto::decodeProxyV2(proto::encodeProxyV2(whole.header.address, whole.header.port));
  if (again.state != State::kDone || again.header.address != whole.header.address ||
      again.header.port != whole.header.port) {
    return "an address that does not survive encodeProxyV2";
  }
  return "";
}

}  // namespace lcc::fuzz
