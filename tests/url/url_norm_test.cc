// The URL normal form (core/support/url_norm.cc): hostile spellings, each with the answer it must get.
#include "lcc/support/url_norm.h"

#include <gtest/gtest.h>

#include <string>

namespace lcc::url {
namespace {

constexpr const char* kRefused = nullptr;  // normalizeUrl must refuse (protocol 201)

struct Case {
  const char* input;
  const char* normal;  // kRefused: refused
};

// clang-format off
const Case kCases[] = {
  // Scheme and host case, default ports, empty path.
  {"HTTP://Example.COM", "http://example.com/"},
  {"hTTpS://EXAMPLE.com:443/A", "https://example.com/A"},
  {"http://example.com:80/", "http://example.com/"},
  {"https://example.com:80/", "https://example.com:80/"},
  {"http://example.com:0080/x", "http://example.com/x"},
  {"http://example.com:/x", "http://example.com/x"},
  {"http://example.com:8080", "http://example.com:8080/"},
  {"http://example.com:65536/", kRefused},
  {"http://example.com:0/", kRefused},
  {"http://example.com:8o/", kRefused},
  {"http://example.com:80:80/", kRefused},
  {"http://example.com?q", "http://example.com/?q"},
  {"http://example.com#f", "http://example.com/#f"},
  // Only http and https, always with "//".
  {"ftp://example.com/", kRefused},
  {"file:///etc/passwd", kRefused},
  {"javascript:alert(1)", kRefused},
  {"http:/example.com/", kRefused},
  {"http:example.com/", kRefused},
  {"//example.com/", kRefused},
  {"http:///example.com/", kRefused},
  {"http://", kRefused},
  // Userinfo is refused, wherever the '@' hides in the authority.
  {"http://user@example.com/", kRefused},
  {"http://user:pw@example.com/", kRefused},
  {"http://example.com@evil.org/", kRefused},
  {"http://example.com:80@evil.org/", kRefused},
  {"http://@example.com/", kRefused},
  {"http://example.com/@evil.org", "http://example.com/@evil.org"},
  {"http://ex%40ample.com/", kRefused},
  // Dot segments, plain and encoded.
  {"http://a.com/docs/../secret.txt", "http://a.com/secret.txt"},
  {"http://a.com/docs/%2e%2e/secret.txt", "http://a.com/secret.txt"},
  {"http://a.com/docs/%2E%2E/secret.txt", "http://a.com/secret.txt"},
  {"http://a.com/docs/.%2e/secret.txt", "http://a.com/secret.txt"},
  {"http://a.com/docs/%2e./secret.txt", "http://a.com/secret.txt"},
  {"http://a.com/docs/./x", "http://a.com/docs/x"},
  {"http://a.com/docs/%2e/x", "http://a.com/docs/x"},
  {"http://a.com/docs/..", "http://a.com/"},
  {"http://a.com/docs/.", "http://a.com/docs/"},
  {"http://a.com/../../../etc/passwd", "http://a.com/etc/passwd"},
  {"http://a.com/docs/...", "http://a.com/docs/..."},
  {"http://a.com/docs/..x/y", "http://a.com/docs/..x/y"},
  {"http://a.com/docs/../secret?x=/docs/", "http://a.com/secret?x=/docs/"},
  {"http://a.com/docs?x=/../y", "http://a.com/docs?x=/../y"},
  {"http://a.com/docs#/../y", "http://a.com/docs#/../y"},
  // Empty segments are kept; dot segments still remove one each.
  {"http://a.com//docs//x", "http://a.com//docs//x"},
  {"http://a.com/docs//../secret", "http://a.com/docs/secret"},
  // Double encoding: %25 stays, but an encoded dot, slash or backslash behind it is refused.
  {"http://a.com/docs/%252e%252e/secret", kRefused},
  {"http://a.com/docs/%252F", kRefused},
  {"http://a.com/docs/%255c", kRefused},
  {"http://a.com/100%25", "http://a.com/100%25"},
  {"http://a.com/100%", kRefused},
  {"http://a.com/%zz", kRefused},
  {"http://a.com/%4", kRefused},
  // %2F and %5C are never decoded; a dot segment hidden behind them is refused.
  {"http://a.com/docs%2Fx", "http://a.com/docs%2Fx"},
  {"http://a.com/docs%2f..%2fsecret", kRefused},
  {"http://a.com/docs/..%2Fsecret", kRefused},
  {"http://a.com/docs/..%5Csecret", kRefused},
  {"http://a.com/docs/%5c", "http://a.com/docs/%5C"},
  // Raw backslashes: browsers read them as '/', curl does not; refused.
  {"http://a.com/docs\\..\\secret", kRefused},
  {"http://a.com\\evil.org/", kRefused},
  {"http:\\\\a.com/", kRefused},
  // ';' parameters: kept, but "..;" is a dot segment to some servers.
  {"http://a.com/docs;v=1/x", "http://a.com/docs;v=1/x"},
  {"http://a.com/docs/..;/secret", kRefused},
  {"http://a.com/docs/.;x/secret", kRefused},
  {"http://a.com/docs/a;..", kRefused},
  {"http://a.com/x;jsessionid=ab", "http://a.com/x;jsessionid=ab"},
  // Percent-encoding: unreserved decoded, hex upper case, the rest kept.
  {"http://a.com/%7Euser/%41%62%2d%5F%2E", "http://a.com/~user/Ab-_."},
  {"http://a.com/a%2bb%3f%23", "http://a.com/a%2Bb%3F%23"},
  {"http://a.com/?q=%7e%2b%e2%82%ac", "http://a.com/?q=~%2B%E2%82%AC"},
  {"http://a.com/a b", kRefused},
  {"http://a.com/a\"b<c>d^e`f{g|h}i[j]", "http://a.com/a%22b%3Cc%3Ed%5Ee%60f%7Bg%7Ch%7Di%5Bj%5D"},
  {"http://a.com/#a#b", "http://a.com/#a%23b"},
  {"http://a.com/caf\xc3\xa9", "http://a.com/caf%C3%A9"},
  {"http://a.com/%e9t%e9", "http://a.com/%E9t%E9"},
  // NUL, controls, overlong UTF-8.
  {"http://a.com/a%00b", kRefused},
  {"http://a.com/a\tb", kRefused},
  {"http://a.com/a\nb", kRefused},
  {" http://a.com/", kRefused},
  {"http://a.com/\x7f", kRefused},
  {"http://a.com/\xc2\x85", kRefused},
  {"http://a.com/%c0%ae%c0%ae/secret", kRefused},
  {"http://a.com/%C0%AF", kRefused},
  {"http://a.com/%e0%80%ae", kRefused},
  {"http://a.com/%f0%80%80%ae", kRefused},
  {"http://a.com/\xc0\xae\xc0\xae/secret", kRefused},
  {"http://a.com/\xe0\x80\xae", kRefused},
  {"http://a.com/\xed\xa0\x80", kRefused},
  {"http://a.com/\xff", kRefused},
  {"http://a.com/\xc3", kRefused},
  {"http://a.com/%C0", "http://a.com/%C0"},
  // IPv4: WHATWG number forms become dotted decimal, like curl reads them.
  {"http://127.0.0.1:8000/docs/", "http://127.0.0.1:8000/docs/"},
  {"http://2130706433/", "http://127.0.0.1/"},
  {"http://0x7f.1/", "http://127.0.0.1/"},
  {"http://0177.0.0.01/", "http://127.0.0.1/"},
  {"http://127.1/", "http://127.0.0.1/"},
  {"http://127.0.0.1./", "http://127.0.0.1/"},
  {"http://256.0.0.1/", kRefused},
  {"http://1.2.3.4.5/", kRefused},
  {"http://4294967296/", kRefused},
  {"http://0x/", "http://0.0.0.0/"},
  {"http://1.2.3.09/", kRefused},
  // IPv6 literals.
  {"http://[::1]/", "http://[::1]/"},
  {"http://[0:0:0:0:0:0:0:1]:8080/", "http://[::1]:8080/"},
  {"http://[2001:DB8::A]:80/", "http://[2001:db8::a]/"},
  {"http://[::ffff:127.0.0.1]/", "http://[::ffff:127.0.0.1]/"},
  {"http://[fe80::1%25eth0]/", kRefused},
  {"http://[::1/", kRefused},
  {"http://[::1]x/", kRefused},
  {"http://[v1.fe]/", kRefused},
  {"http://[:::1]/", kRefused},
  {"http://::1/", kRefused},
  // Host names: IDNs become A-labels; look-alikes stay the other host they are.
  {"http://B\xc3\xbc" "cher.example/", "http://xn--bcher-kva.example/"},
  {"http://\xd0\xb0\xd1\x80\xd1\x80\xd3\x8f\xd0\xb5.com/", "http://xn--80ak6aa92e.com/"},
  {"http://XN--BCHER-KVA.example/", "http://xn--bcher-kva.example/"},
  {"http://\xef\xbd\x85\xef\xbd\x98.com/", "http://ex.com/"},
  {"http://fa\xc3\x9f.de/", "http://xn--fa-hia.de/"},
  {"http://%65xample.com/", "http://example.com/"},
  {"http://exa%2Fmple.com/", kRefused},
  {"http://exa%00mple.com/", kRefused},
  {"http://exa_mple.com/", "http://exa_mple.com/"},
  {"http://a..com/", kRefused},
  {"http://example.com./", "http://example.com./"},
  {"http://ex!ample.com/", kRefused},
  {"http://xn--/", kRefused},
};
// clang-format on

TEST(UrlNormTest, HostileSpellingsGetTheirAnswer) {
  ASSERT_GE(std::size(kCases), 60u);
  for (const auto& c : kCases) {
    auto r = normalizeUrl(c.input);
    if (c.normal == kRefused) {
      EXPECT_FALSE(r.isOk()) << c.input << " gave " << (r.isOk() ? r.value() : "");
    } else if (!r.isOk()) {
      ADD_FAILURE() << c.input << " refused: " << r.status().message();
    } else {
      EXPECT_EQ(r.value(), c.normal) << c.input;
      auto again = normalizeUrl(r.value());
      ASSERT_TRUE(again.isOk()) << r.value();
      EXPECT_EQ(again.value(), r.value()) << "not idempotent";
    }
  }
}

TEST(UrlNormTest, NulInsideTheInputIsRefused) {
  std::string with_nul("http://a.com/a\0b", 16);
  auto r = normalizeUrl(with_nul);
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("NUL"), std::string::npos);
}

TEST(UrlNormTest, LengthIsBounded) {
  std::string u = "http://a.com/" + std::string(100, 'x');
  EXPECT_TRUE(normalizeUrl(u, 200).isOk());
  EXPECT_FALSE(normalizeUrl(u, 50).isOk());
  // Encoding grows a URL: the bound holds for the result too.
  std::string grows = "http://a.com/" + std::string(40, '^');
  EXPECT_FALSE(normalizeUrl(grows, 100).isOk());
}

struct PrefixCase {
  const char* prefix;
  const char* normal;  // kRefused: refused
};

TEST(UrlNormTest, PrefixesEndAtASegmentBoundary) {
  const PrefixCase cases[] = {
      {"http://site.com", "http://site.com/"},
      {"http://site.com/docs", "http://site.com/docs/"},
      {"HTTP://Site.com:80/docs/", "http://site.com/docs/"},
      {"http://site.com/docs/../other", "http://site.com/other/"},
      {"http://site.com/docs?x", kRefused},
      {"http://site.com/docs#x", kRefused},
      {"http://user@site.com/", kRefused},
      {"site.com/", kRefused},
  };
  for (const auto& c : cases) {
    auto r = normalizePrefix(c.prefix);
    if (c.normal == kRefused) {
      EXPECT_FALSE(r.isOk()) << c.prefix;
    } else {
      ASSERT_TRUE(r.isOk()) << c.prefix << ": " << r.status().message();
      EXPECT_EQ(r.value(), c.normal);
    }
  }
}

struct MatchCase {
  const char* prefix;
  const char* url;
  bool under;
};

TEST(UrlNormTest, MatchingComparesNormalFormsSegmentBySegment) {
  const MatchCase cases[] = {
      {"http://site.com", "http://site.com/a", true},
      {"http://site.com", "http://site.com.evil.org/", false},
      {"http://site.com", "http://site.com:8080/", false},
      {"http://site.com", "https://site.com/", false},
      {"http://site.com/docs", "http://site.com/docs/a.html", true},
      {"http://site.com/docs", "http://site.com/docs", false},
      {"http://site.com/docs", "http://site.com/docsecret", false},
      {"http://site.com/docs", "http://site.com/docs%2Fa", false},
      {"http://site.com/docs/", "http://site.com/docs/../secret", false},
      {"http://site.com/docs/", "http://site.com/docs/%2e%2e/secret", false},
      {"http://site.com/docs/", "http://SITE.com:80/docs/x", true},
      {"http://site.com/docs/", "http://site.com/docs//x", true},
      {"http://site.com/docs/", "http://site.com/docs?x", false},
      {"http://127.0.0.1/", "http://2130706433/x", true},
  };
  for (const auto& c : cases) {
    auto p = normalizePrefix(c.prefix);
    auto u = normalizeUrl(c.url);
    ASSERT_TRUE(p.isOk() && u.isOk()) << c.prefix << " " << c.url;
    EXPECT_EQ(underPrefix(u.value(), p.value()), c.under) << c.prefix << " " << c.url;
  }
  EXPECT_FALSE(underPrefix("http://site.com/docsx", "http://site.com/docs"));  // not a prefix form
}

TEST(UrlNormTest, SplitJoinAndOrigin) {
  auto p = splitNormalUrl("https://a.com:8443/x/y?q=1#f");
  ASSERT_TRUE(p.isOk());
  EXPECT_EQ(p->scheme, "https");
  EXPECT_EQ(p->host, "a.com");
  EXPECT_EQ(p->port, 8443);
  EXPECT_EQ(p->path, "/x/y");
  EXPECT_EQ(p->query, std::optional<std::string>("q=1"));
  EXPECT_EQ(p->fragment, std::optional<std::string>("f"));
  EXPECT_EQ(joinUrl(*p), "https://a.com:8443/x/y?q=1#f");
  EXPECT_FALSE(splitNormalUrl("HTTP://a.com/").isOk());
  EXPECT_EQ(originOf("https://a.com:8443/x/y?q=1"), "https://a.com:8443/");
  EXPECT_EQ(originOf("nonsense"), "");
}

}  // namespace
}  // namespace lcc::url
