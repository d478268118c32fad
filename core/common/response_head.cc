#include "common/response_head.h"

namespace lcc {
namespace {
constexpr std::string_view kMagic = "lcc-head 1 ";

bool endsWith(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}
}  // namespace

std::string responseHeadPath(std::string_view content_path) {
  std::string p(content_path);
  p += ".http";
  return p;
}

std::string encodeResponseHead(std::string_view md5, std::string_view head) {
  std::string out;
  out.reserve(kMagic.size() + md5.size() + 1 + head.size());
  out.append(kMagic).append(md5).append("\n").append(head);
  return out;
}

std::string decodeResponseHead(std::string_view file, std::string_view md5) {
  if (md5.empty() || file.size() > kMaxResponseHeadFile) return {};
  const auto nl = file.find('\n');
  if (nl == std::string_view::npos) return {};
  const std::string_view first = file.substr(0, nl);
  if (first.size() != kMagic.size() + md5.size() || first.substr(0, kMagic.size()) != kMagic ||
      first.substr(kMagic.size()) != md5) {
    return {};
  }
  const std::string_view head = file.substr(nl + 1);
  if (head.substr(0, 5) != "HTTP/") return {};
  if (!endsWith(head, "\r\n\r\n") && !endsWith(head, "\n\n")) return {};
  return std::string(head);
}

}  // namespace lcc
