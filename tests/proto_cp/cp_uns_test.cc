#include "proto/cp_uns.h"

#include <gtest/gtest.h>

namespace lcc::proto {
namespace {

UrlRules rules() {
  UrlRules r;
  r.accept_mime = {"text/*", "application/pdf"};
  r.prefixes = {"http://www.server.com/", "https://docs.server.com/a/"};
  r.max_url_length = 64;
  return r;
}

ErrorCode codeOf(const UrlAttrs& a, std::string_view prefix = "") { return validateUrl(a, prefix, 7, rules()).code; }

TEST(CpUnsValidation, EachUrlErrorCode) {
  EXPECT_EQ(codeOf({{"c", "http://www.server.com/a"}, {"m", "text/html"}}), ErrorCode::kNone);
  EXPECT_EQ(codeOf({{"c", "a"}, {"m", "text/html"}}, "http://www.server.com/"), ErrorCode::kNone);
  EXPECT_EQ(codeOf({{"m", "text/html"}}), ErrorCode::kInvalidUrl);
  EXPECT_EQ(codeOf({{"c", "mailto:x@y"}, {"m", "text/html"}}, "http://www.server.com/"), ErrorCode::kInvalidUrl);
  EXPECT_EQ(codeOf({{"c", "http:///nohost"}, {"m", "text/html"}}), ErrorCode::kInvalidUrl);
  EXPECT_EQ(codeOf({{"c", "http://www.server.com/" + std::string(60, 'x')}, {"m", "text/html"}}), ErrorCode::kInvalidUrl);
  EXPECT_EQ(codeOf({{"c", "http://www.server.com/a\tb"}, {"m", "text/html"}}), ErrorCode::kInvalidUrl);
  EXPECT_EQ(codeOf({{"c", "http://www.server.com:99999/"}, {"m", "text/html"}}), ErrorCode::kInvalidUrl);
  EXPECT_EQ(codeOf({{"c", "https://docs.server.com/b/x"}, {"m", "text/html"}}), ErrorCode::kOutsidePrefix);
  EXPECT_EQ(codeOf({{"c", "http://www.server.com/a"}, {"m", "image/png"}}), ErrorCode::kMimeNotAccepted);
  EXPECT_EQ(codeOf({{"c", "http://www.server.com/a"}, {"m", "text"}}), ErrorCode::kMimeNotAccepted);
  EXPECT_EQ(codeOf({{"c", "http://www.server.com/a"}, {"m", "text/html"}, {"op", "remove"}}), ErrorCode::kInvalidOp);
  for (auto [k, v] : std::vector<std::pair<std::string, std::string>>{
           {"mt", "2024-13-01T00:00:00Z"}, {"sz", "12k"}, {"md5", "xyz"}, {"tod", "5"}, {"tod", "3-3"}}) {
    EXPECT_EQ(codeOf({{"c", "http://www.server.com/a"}, {"m", "text/html"}, {k, v}}), ErrorCode::kInvalidAttribute)
        << k << "=" << v;
  }
}

TEST(CpUnsValidation, NormalisesWhatItAccepts) {
  auto v = validateUrl({{"c", "a.htm"},
                        {"m", "Text/HTML"},
                        {"b", "a.htm"},
                        {"f", "http://www.server.com/a.htm?x"},
                        {"md5", "0123456789ABCDEF0123456789ABCDEF"},
                        {"mt", "1714564800"},
                        {"tod", "20-24,0-4,2-6"},
                        {"st", "has space:x"}},
                       "http://www.server.com/", 7, rules());
  ASSERT_EQ(v.code, ErrorCode::kNone) << v.message;
  EXPECT_EQ(v.notice.key.pid, 7u);
  EXPECT_EQ(v.notice.key.url, "http://www.server.com/a.htm");
  EXPECT_EQ(v.notice.key.mime, "text/html");
  EXPECT_FALSE(v.notice.browse.has_value());  // same as c
  EXPECT_EQ(v.notice.fetch, "http://www.server.com/a.htm?x");
  EXPECT_EQ(v.notice.md5, "0123456789abcdef0123456789abcdef");
  EXPECT_EQ(v.notice.mtime, 1714564800);
  EXPECT_EQ(v.notice.tod, "0-6,20-24");
  EXPECT_EQ(v.notice.view_tag, "");  // malformed: blanked, not an error
  auto nb = validateUrl({{"c", "http://www.server.com/a"}, {"m", "text/html"}, {"b", ""}}, "", 7, rules());
  ASSERT_TRUE(nb.notice.browse.has_value());
  EXPECT_EQ(*nb.notice.browse, "");  // not browsable
}

// Issue 14: URLs are compared in their normal form, segment by segment (core/support/url_norm.cc).
TEST(CpUnsValidation, PrefixesCannotBeEscaped) {
  UrlRules r = rules();
  r.max_url_length = 2048;
  auto check = [&](const std::string& c, ErrorCode want, const std::string& f = "") {
    UrlAttrs a = {{"c", c}, {"m", "text/html"}};
    if (!f.empty()) a.emplace_back("f", f);
    auto v = validateUrl(a, "", 7, r);
    EXPECT_EQ(v.code, want) << c << " " << f << ": " << v.message;
    return v;
  };
  check("https://docs.server.com/a/../b/x", ErrorCode::kOutsidePrefix);
  check("https://docs.server.com/a/%2e%2e/b/x", ErrorCode::kOutsidePrefix);
  check("https://docs.server.com/a/.%2E/b/x", ErrorCode::kOutsidePrefix);
  check("https://docs.server.com/ab/x", ErrorCode::kOutsidePrefix);
  check("https://docs.server.com:8443/a/x", ErrorCode::kOutsidePrefix);
  check("https://docs.server.com.evil.org/a/x", ErrorCode::kOutsidePrefix);
  check("https://docs.server.com@evil.org/a/x", ErrorCode::kInvalidUrl);
  check("https://docs.server.com/a/..;/b", ErrorCode::kInvalidUrl);
  check("https://docs.server.com/a/..%2Fb", ErrorCode::kInvalidUrl);
  check("https://docs.server.com/a\\..\\b", ErrorCode::kInvalidUrl);
  check("https://docs.server.com/a/x%00", ErrorCode::kInvalidUrl);
  // A fetch URL in the form of a slot move's copy (core/qm/move_copy.h) is not a CP's to give.
  UrlRules longer = rules();
  longer.max_url_length = 2048;
  const std::string copy = "http://www.server.com/cu/content/S/1?lcc_copy=0123456789abcdef0123456789abcdef-1&lcc_of=";
  EXPECT_EQ(validateUrl({{"c", "http://www.server.com/a"}, {"m", "text/html"}, {"f", copy}}, "", 7, longer).code,
            ErrorCode::kInvalidUrl);
  EXPECT_EQ(validateUrl({{"c", "http://www.server.com/a"}, {"m", "text/html"}, {"f", copy.substr(0, 36)}}, "", 7, longer)
                .code,
            ErrorCode::kNone);
  check("https://docs.server.com/a/x", ErrorCode::kOutsidePrefix, "https://docs.server.com/a/../b");
  auto v = check("HTTPS://Docs.Server.COM:443/a/./b/../%7Ex", ErrorCode::kNone, "https://docs.server.com/a/%7ex");
  EXPECT_EQ(v.notice.key.url, "https://docs.server.com/a/~x");
  EXPECT_EQ(v.notice.fetch, "");  // the same URL once normalised
}

TEST(CpUnsValidation, Helpers) {
  EXPECT_EQ(resolveUrl("http://a/", "b"), "http://a/b");
  EXPECT_EQ(resolveUrl("http://a/", "HTTPS://b/"), "HTTPS://b/");
  EXPECT_TRUE(mimeAccepted("text/plain", {"text/*"}));
  EXPECT_FALSE(mimeAccepted("textual/plain", {"text/*"}));
  EXPECT_EQ(canonicalTod("0-24", 24), "0-24");
  EXPECT_EQ(canonicalTod("0-25", 24), std::nullopt);
  EXPECT_TRUE(validViewTag("lang:en-GB"));
  EXPECT_FALSE(validViewTag(":x"));
  EXPECT_FALSE(validViewTag(std::string(101, 'a') + ":"));
}

TEST(CpUnsReplies, RoundTripThroughTheReplyDecoder) {
  InitAcceptedInfo info;
  info.seq = 42;
  info.last_ip = "127.0.0.1";
  info.last_time = 1714564800;
  info.mime = {"text/*", "application/pdf"};
  info.files_used = 1200;
  info.files_free = 98800;
  info.space_used = 52428800;
  info.space_free = 1021313024;
  info.fullset_allowed = 3;
  info.fullset_wanted = true;
  info.fullset_reason = "cache-crash";
  info.error_total = 2;
  info.processing = 318;
  FetchErrorEntry e;
  e.notice.key = {17, "http://www.server.com/gone.htm", "text/html"};
  e.code = ErrorCode::kNotFound;
  e.message = "not found (HTTP 404) & <gone>";
  info.errors = {e};
  std::string wire = encodeInitAccepted(info) + encodeSetResultBegin() +
                     encodeUrlError(ErrorCode::kMimeNotAccepted, {{"c", "http://x/\"q\""}, {"m", "image/gif"}}, "no") +
                     encodeSetAccepted(2) + encodeInitRejected(ErrorCode::kAuthFailed, "authentication failed");
  ReplyDecoder d;
  std::vector<CpReply> all;
  for (char c : wire) {
    for (auto& r : d.feed(std::string_view(&c, 1))) all.push_back(std::move(r));
  }
  ASSERT_FALSE(d.failed()) << d.errorMessage();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].kind, CpReply::Kind::kInitAccepted);
  EXPECT_EQ(all[0].init.seq, 42u);
  EXPECT_EQ(all[0].init.last_time, 1714564800);
  EXPECT_EQ(all[0].init.mime, info.mime);
  EXPECT_EQ(all[0].init.space_free, 1021313024u);
  EXPECT_TRUE(all[0].init.fullset_wanted);
  EXPECT_EQ(all[0].init.fullset_reason, "cache-crash");
  EXPECT_EQ(all[0].init.processing, 318u);
  ASSERT_EQ(all[0].init_errors.size(), 1u);
  EXPECT_EQ(all[0].init_errors[0].message, "not found (HTTP 404) & <gone>");
  EXPECT_EQ(all[1].kind, CpReply::Kind::kSetResult);
  EXPECT_TRUE(all[1].accepted);
  EXPECT_EQ(all[1].received, 2u);
  ASSERT_EQ(all[1].set_errors.size(), 1u);
  EXPECT_EQ(*findAttr(all[1].set_errors[0].attrs, "c"), "http://x/\"q\"");
  EXPECT_EQ(all[2].kind, CpReply::Kind::kInitRejected);
  EXPECT_EQ(all[2].code, ErrorCode::kAuthFailed);
}

TEST(CpUnsReplies, AReplyWithoutTheNamespaceIsRefused) {
  ReplyDecoder d;
  d.feed("<lococa:init_rejected><reason code=\"110\">x</reason></lococa:init_rejected>");
  EXPECT_TRUE(d.failed());
}

}  // namespace
}  // namespace lcc::proto
