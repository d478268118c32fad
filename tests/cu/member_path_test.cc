// Tar member paths (plugins/cu-tar/member_path.h): readable for ordinary URLs, and for
// 10 000 hostile URL identities safe (relative, no `.`/`..` components, short enough
// for any file system), unique, and never a file where another member needs a folder.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "member_path.h"

namespace lcc {
namespace {

using plugins::cu_tar::memberPath;

TEST(MemberPath, OrdinaryUrlsMirrorTheUrl) {
  EXPECT_EQ(memberPath(17, "http://www.server.com/docs/a.htm", "text/html"), "17/www.server.com/docs/a.htm");
  EXPECT_EQ(memberPath(1, "http://127.0.0.1:8080/docs/page07.html", "text/html"), "1/127.0.0.1+8080/docs/page07.html");
  EXPECT_EQ(memberPath(1, "https://h.org/r.pdf", "application/pdf"), "1/h.org+https/r.pdf");
  EXPECT_EQ(memberPath(1, "http://h/docs/", "text/html"), "1/h/docs/(index)(text%2Fhtml)");
  EXPECT_EQ(memberPath(1, "http://h/docs", "text/html"), "1/h/docs(text%2Fhtml)");
  EXPECT_EQ(memberPath(1, "http://h/a.html", "text/plain"), "1/h/a.html(text%2Fplain)");
  EXPECT_EQ(memberPath(1, "http://h/p.php?id=5&x=1", "text/html"), "1/h/p.php%3Fid=5%26x=1(text%2Fhtml)");
  EXPECT_EQ(memberPath(1, "http://h/site.html/x.html", "text/html"), "1/h/site.html[d]/x.html");
}

bool safe(const std::string& p, std::string* why) {
  if (p.empty() || p.front() == '/') return *why = "absolute or empty", false;
  if (p.size() > 1200) return *why = "too long", false;
  std::size_t start = 0;
  for (;;) {
    auto slash = p.find('/', start);
    std::string part = p.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (part.empty() || part == "." || part == "..") return *why = "bad component '" + part + "'", false;
    if (part.size() > 255) return *why = "component over 255 bytes", false;
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  for (unsigned char c : p) {
    if (c < 0x21 || c > 0x7e || c == '\\') return *why = "byte " + std::to_string(c), false;
  }
  return true;
}

std::vector<std::tuple<ProviderId, std::string, std::string>> hostileIdentities() {
  std::mt19937 rng(20240501);
  const std::vector<std::string> pieces = {
      "..", ".", "/", "//", "/../", "%2e%2e", "%2F", "\\", "\\..\\", "a", "index.html", "docs", "docs/", "?", "#",
      "?q=1", ":", "@", "+", "(", ")", "[d]", "(index)", "[empty]", "(#", " ", "\t", "\x01", "\x7f", "\xff", "\xc3\xa9",
      "\xe2\x80\xae", "~", "*", "\"", "'", "<", ">", "|", "&", ";", "$(rm)", "`", "CON", "a.html", "x.HTML", "%", "%%",
      "%41", "A", "https://", "http://", "file:///etc/passwd", "../../etc/passwd", "C:\\x", "\xef\xbf\xbd"};
  const std::vector<std::string> schemes = {"http://", "https://", "HTTP://", "ftp://", "", "http:/", "h+t://", "://"};
  const std::vector<std::string> hosts = {"h", "H", "h:80", "h:8080", "[::1]:8080", "[::1]", "user:pw@h", "", "..", ".",
                                          "h..", "a+b", "h:99999", "h:", "xn--bcher-kva.example"};
  const std::vector<std::string> mimes = {"text/html", "text/plain", "application/pdf", "text/html;x", "", "d",
                                          "(text%2Fhtml)", "text/html/..", "../..", "#abc"};
  std::vector<std::tuple<ProviderId, std::string, std::string>> out;
  std::set<std::tuple<ProviderId, std::string, std::string>> seen;
  while (out.size() < 10000) {
    std::string url = schemes[rng() % schemes.size()] + hosts[rng() % hosts.size()];
    int n = static_cast<int>(rng() % 8);
    for (int i = 0; i < n; ++i) url += pieces[rng() % pieces.size()];
    if (rng() % 50 == 0) url += std::string(300 + rng() % 3000, "ab/."[rng() % 4]);  // very long
    if (rng() % 40 == 0) {
      std::string seg;
      for (int i = 0; i < 400; ++i) seg.push_back(static_cast<char>(1 + rng() % 255));  // any byte but NUL
      url += "/" + seg;
    }
    auto id = std::make_tuple(ProviderId(1 + rng() % 3), url, mimes[rng() % mimes.size()]);
    if (seen.insert(id).second) out.push_back(id);
  }
  return out;
}

TEST(MemberPath, TenThousandHostileIdentitiesGiveSafeUniquePaths) {
  const auto ids = hostileIdentities();
  std::set<std::string> files;
  std::set<std::string> folders;
  for (const auto& [pid, url, mime] : ids) {
    const std::string p = memberPath(pid, url, mime);
    std::string why;
    ASSERT_TRUE(safe(p, &why)) << why << ": " << p << " for " << url;
    ASSERT_TRUE(files.insert(p).second) << "two identities share " << p << " (second: " << url << " " << mime << ")";
    for (auto slash = p.find('/'); slash != std::string::npos; slash = p.find('/', slash + 1)) folders.insert(p.substr(0, slash));
  }
  // No member is also a folder of another member (that would break extraction).
  for (const auto& f : files) ASSERT_EQ(folders.count(f), 0u) << f << " is both a file and a folder";
  // Deterministic: the same identity gives the same path (a mirror overwrites in place).
  for (std::size_t i = 0; i < 100; ++i) {
    const auto& [pid, url, mime] = ids[i];
    EXPECT_EQ(memberPath(pid, url, mime), memberPath(pid, url, mime));
  }
}

}  // namespace
}  // namespace lcc
