#include "s3/s3_list.h"

#include <charconv>

namespace lcc::s3 {

namespace {
// The text of the first <tag>…</tag> in [from, end), unescaped; npos when absent.
std::size_t elementText(std::string_view xml, std::string_view tag, std::size_t from, std::size_t end,
                        std::string* out) {
  std::string open, close;
  open.append("<").append(tag).append(">");
  close.append("</").append(tag).append(">");
  std::size_t a = xml.find(open, from);
  if (a == std::string_view::npos || a >= end) return std::string_view::npos;
  a += open.size();
  std::size_t b = xml.find(close, a);
  if (b == std::string_view::npos || b > end) return std::string_view::npos;
  out->clear();
  std::string_view v = xml.substr(a, b - a);
  static constexpr std::pair<std::string_view, char> kEntities[] = {
      {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
  for (std::size_t i = 0; i < v.size();) {
    bool done = false;
    if (v[i] == '&') {
      for (const auto& [name, ch] : kEntities) {
        if (v.compare(i, name.size(), name) == 0) {
          out->push_back(ch);
          i += name.size();
          done = true;
          break;
        }
      }
    }
    if (!done) out->push_back(v[i++]);
  }
  return b + close.size();
}
}  // namespace

Result<S3ListPage> parseListPage(std::string_view xml) {
  if (xml.find("<ListBucketResult") == std::string_view::npos) {
    return Status::corruption("s3: LIST: the answer is not a ListBucketResult");
  }
  S3ListPage page;
  std::size_t pos = 0;
  std::string text;
  for (;;) {
    std::size_t a = xml.find("<Contents>", pos);
    if (a == std::string_view::npos) break;
    std::size_t b = xml.find("</Contents>", a);
    if (b == std::string_view::npos) return Status::corruption("s3: LIST: unterminated <Contents>");
    S3Object o;
    if (elementText(xml, "Key", a, b, &o.key) == std::string_view::npos) {
      return Status::corruption("s3: LIST: <Contents> without <Key>");
    }
    if (elementText(xml, "Size", a, b, &text) != std::string_view::npos) {
      std::from_chars(text.data(), text.data() + text.size(), o.size);
    }
    page.objects.push_back(std::move(o));
    pos = b + 11;
  }
  std::string truncated;
  (void)elementText(xml, "IsTruncated", 0, xml.size(), &truncated);
  if (truncated == "true") {
    if (elementText(xml, "NextContinuationToken", 0, xml.size(), &page.next_token) == std::string_view::npos ||
        page.next_token.empty()) {
      return Status::corruption("s3: LIST: truncated without a NextContinuationToken");
    }
  }
  return page;
}

}  // namespace lcc::s3
