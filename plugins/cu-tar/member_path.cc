#include "member_path.h"

#include <openssl/evp.h>

#include <array>
#include <vector>

namespace lcc::plugins::cu_tar {
namespace {

constexpr std::size_t kMaxComponent = 200;  // file systems allow 255 bytes
constexpr std::size_t kKeepOnHash = 96;
constexpr std::size_t kMaxPath = 1024;      // PATH_MAX is 4096; leave room for the target folder
constexpr char kHex[] = "0123456789ABCDEF";
constexpr char kLowerHex[] = "0123456789abcdef";

bool alnum(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }
bool hostSafe(unsigned char c) { return alnum(c) || c == '-' || c == '.' || c == '_' || c == '~'; }
bool segmentSafe(unsigned char c) {
  return hostSafe(c) || c == ',' || c == '=' || c == '@' || c == '+' || c == '!';
}

std::string encode(std::string_view s, bool host) {
  std::string out;
  out.reserve(s.size() + 8);
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (host ? hostSafe(c) : segmentSafe(c)) {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  if (out == ".") return "%2E";
  if (out == "..") return "%2E%2E";
  return out;
}

std::string md5Hex(std::string_view a, std::string_view b = {}) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_md5(), nullptr);
  EVP_DigestUpdate(ctx, a.data(), a.size());
  const char nul = '\0';
  EVP_DigestUpdate(ctx, &nul, 1);
  EVP_DigestUpdate(ctx, b.data(), b.size());
  EVP_DigestFinal_ex(ctx, md, &len);
  EVP_MD_CTX_free(ctx);
  std::string out;
  for (unsigned i = 0; i < len; ++i) {
    out.push_back(kLowerHex[md[i] >> 4]);
    out.push_back(kLowerHex[md[i] & 15]);
  }
  return out;
}

// The first `n` bytes of an encoded string, not cutting a %XX escape.
std::string_view keepPrefix(std::string_view enc, std::size_t n) {
  if (enc.size() <= n) return enc;
  std::size_t cut = n;
  if (cut >= 1 && enc[cut - 1] == '%') cut -= 1;
  else if (cut >= 2 && enc[cut - 2] == '%') cut -= 2;
  return enc.substr(0, cut);
}

// The canonical MIME type of a file name's extension, or empty.
std::string_view canonicalMime(std::string_view name) {
  auto dot = name.rfind('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 == name.size()) return {};
  std::string ext;
  for (char c : name.substr(dot + 1)) ext.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c));
  static const std::array<std::pair<std::string_view, std::string_view>, 27> kTable = {{
      {"html", "text/html"}, {"htm", "text/html"}, {"txt", "text/plain"}, {"css", "text/css"},
      {"js", "text/javascript"}, {"csv", "text/csv"}, {"md", "text/markdown"}, {"xml", "application/xml"},
      {"json", "application/json"}, {"pdf", "application/pdf"}, {"xhtml", "application/xhtml+xml"},
      {"rss", "application/rss+xml"}, {"atom", "application/atom+xml"}, {"zip", "application/zip"},
      {"gz", "application/gzip"}, {"tar", "application/x-tar"}, {"doc", "application/msword"},
      {"rtf", "application/rtf"}, {"png", "image/png"}, {"jpg", "image/jpeg"}, {"jpeg", "image/jpeg"},
      {"gif", "image/gif"}, {"svg", "image/svg+xml"}, {"webp", "image/webp"}, {"mp3", "audio/mpeg"},
      {"mp4", "video/mp4"}, {"ogg", "audio/ogg"},
  }};
  for (const auto& [e, m] : kTable) {
    if (e == ext) return m;
  }
  return {};
}

std::string folderName(std::string_view raw) {
  if (raw.empty()) return "[empty]";
  std::string enc = encode(raw, false);
  if (enc.size() > kMaxComponent) return std::string(keepPrefix(enc, kKeepOnHash)) + "[#" + md5Hex(raw) + "]";
  if (!canonicalMime(enc).empty()) enc += "[d]";
  return enc;
}

struct ParsedUrl {
  bool ok = false;
  std::string_view scheme, authority, path, tail;  // tail: from '?' or '#'
};

ParsedUrl parseUrl(std::string_view url) {
  ParsedUrl p;
  auto colon = url.find("://");
  if (colon == std::string_view::npos || colon == 0 || !alnum(static_cast<unsigned char>(url[0]))) return p;
  for (char c : url.substr(0, colon)) {
    if (!alnum(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.') return p;
  }
  p.scheme = url.substr(0, colon);
  std::string_view rest = url.substr(colon + 3);
  auto end = rest.find_first_of("/?#");
  p.authority = rest.substr(0, end);
  rest = end == std::string_view::npos ? std::string_view() : rest.substr(end);
  auto q = rest.find_first_of("?#");
  p.path = rest.substr(0, q);
  p.tail = q == std::string_view::npos ? std::string_view() : rest.substr(q);
  p.ok = true;
  return p;
}

std::string hostPart(const ParsedUrl& p) {
  std::string_view host = p.authority, port;
  auto colon = host.rfind(':');
  if (colon != std::string_view::npos && colon + 1 < host.size() && host.size() - colon - 1 <= 5) {
    bool digits = true;
    for (char c : host.substr(colon + 1)) digits = digits && c >= '0' && c <= '9';
    if (digits) port = host.substr(colon + 1), host = host.substr(0, colon);
  }
  std::string h = host.empty() ? std::string("[empty]") : encode(host, true);
  if (!port.empty()) h += "+" + std::string(port);
  if (p.scheme != "http") h += "+" + encode(p.scheme, true);
  if (h.size() > kMaxComponent) {
    std::string whole(p.scheme);
    whole += "://";
    whole += p.authority;
    h = std::string(keepPrefix(encode(host, true), kKeepOnHash)) + "[#" + md5Hex(whole) + "]";
  }
  return h;
}

}  // namespace

std::string memberPath(ProviderId pid, std::string_view url, std::string_view mime) {
  const ParsedUrl p = parseUrl(url);
  std::vector<std::string> folders;
  std::string base;       // the file name before the MIME suffix
  std::string raw_last;   // what the file name encodes (for hashing)
  bool token_base = false;
  if (!p.ok) {
    folders.push_back("[other]");
    raw_last = std::string(url);
    base = raw_last.empty() ? std::string("(index)") : encode(raw_last, false);
    token_base = raw_last.empty();
  } else {
    folders.push_back(hostPart(p));
    if (p.path.empty()) {
      raw_last = std::string(p.tail);
      base = "(noslash)" + encode(p.tail, false);
      token_base = true;
    } else {
      std::string_view path = p.path.substr(1);  // after the leading '/'
      std::size_t start = 0;
      for (;;) {
        auto slash = path.find('/', start);
        if (slash == std::string_view::npos) break;
        folders.push_back(folderName(path.substr(start, slash - start)));
        start = slash + 1;
      }
      raw_last = std::string(path.substr(start)) + std::string(p.tail);
      token_base = raw_last.empty();
      base = token_base ? std::string("(index)") : encode(raw_last, false);
    }
  }
  std::string file;
  const std::string_view canonical = token_base ? std::string_view() : canonicalMime(base);
  if (!canonical.empty() && canonical == mime) {
    file = base;
  } else {
    file = base + "(" + encode(mime, false) + ")";
  }
  if (file.size() > kMaxComponent) {
    file = std::string(keepPrefix(base, kKeepOnHash)) + "(#" + md5Hex(raw_last, mime) + ")";
  }

  std::string out = std::to_string(pid);
  std::size_t total = out.size() + file.size() + 1;
  for (const auto& f : folders) total += f.size() + 1;
  if (total > kMaxPath) {
    // Keep the first folders, then one file named by the whole identity's hash.
    for (std::size_t i = 0; i < folders.size() && out.size() + folders[i].size() + 1 <= kMaxPath / 2; ++i) {
      out += "/" + folders[i];
    }
    return out + "/(#" + md5Hex(url, mime) + ")";
  }
  for (const auto& f : folders) out += "/" + f;
  return out + "/" + file;
}

}  // namespace lcc::plugins::cu_tar
