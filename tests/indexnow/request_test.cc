// IndexNow requests (core/indexnow/request.h): what is taken, and each refusal with the
// protocol's status.
#include "indexnow/request.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace lcc::indexnow {
namespace {

using ::testing::HasSubstr;

const char* kKey = "7e3f6e8bc6b743e2a5e6a4a4c2d1a0a5";

http::Request get(const std::string& url, const std::string& key, const std::string& location = "") {
  http::Request r;
  r.method = "GET";
  r.query.emplace("url", url);
  r.query.emplace("key", key);
  if (!location.empty()) r.query.emplace("keyLocation", location);
  return r;
}

std::string post(const std::string& host, const std::string& key, const std::string& location,
                 const std::vector<std::string>& urls) {
  std::string body = "{\"host\": \"" + host + "\", \"key\": \"" + key + "\"";
  if (!location.empty()) body += ", \"keyLocation\": \"" + location + "\"";
  body += ", \"urlList\": [";
  for (std::size_t i = 0; i < urls.size(); ++i) body += (i ? ", \"" : "\"") + urls[i] + "\"";
  return body + "]}";
}

TEST(IndexNowRequestTest, TheDocumentedGetAndPostAreTakenInNormalForm) {
  auto g = parseGet(get("https://www.example.org/product.html", kKey));
  ASSERT_TRUE(std::holds_alternative<Submission>(g)) << std::get<Refusal>(g).message;
  const auto& s = std::get<Submission>(g);
  EXPECT_EQ(s.urls, std::vector<std::string>{"https://www.example.org/product.html"});
  EXPECT_EQ(s.key_url, "https://www.example.org/" + std::string(kKey) + ".txt");
  EXPECT_EQ(s.key_scope, "https://www.example.org/");

  auto p = parsePost(post("www.example.org", kKey, "https://www.example.org/" + std::string(kKey) + ".txt",
                          {"https://www.example.org/url1", "https://WWW.example.org/folder/./url2",
                           "https://www.example.org:443/url3"}));
  ASSERT_TRUE(std::holds_alternative<Submission>(p)) << std::get<Refusal>(p).message;
  EXPECT_EQ(std::get<Submission>(p).urls,
            (std::vector<std::string>{"https://www.example.org/url1", "https://www.example.org/folder/url2",
                                      "https://www.example.org/url3"}));
}

TEST(IndexNowRequestTest, AKeyLocationLimitsTheUrlsToItsFolder) {
  auto p = parsePost(post("a.example", kKey, "http://a.example/docs/key.txt",
                          {"http://a.example/docs/x.html", "http://a.example/docs/sub/y.html"}));
  ASSERT_TRUE(std::holds_alternative<Submission>(p));
  EXPECT_EQ(std::get<Submission>(p).key_scope, "http://a.example/docs/");
  auto out = parsePost(post("a.example", kKey, "http://a.example/docs/key.txt", {"http://a.example/other.html"}));
  ASSERT_TRUE(std::holds_alternative<Refusal>(out));
  EXPECT_EQ(std::get<Refusal>(out).status, 422);
  EXPECT_THAT(std::get<Refusal>(out).message, HasSubstr("outside the folder of the key file"));
  auto climb = parsePost(post("a.example", kKey, "http://a.example/docs/key.txt", {"http://a.example/docs/../x"}));
  EXPECT_EQ(std::get<Refusal>(climb).status, 422);
}

TEST(IndexNowRequestTest, EachRuleRefusesWithItsStatus) {
  const std::string many = [] {
    std::vector<std::string> urls(10'001, "http://a.example/x");
    return post("a.example", kKey, "", urls);
  }();
  const std::vector<std::pair<std::string, int>> posts = {
      {"", 400},
      {"not json", 400},
      {"[1, 2]", 400},
      {"{\"host\": \"a.example\", \"urlList\": [\"http://a.example/\"]}", 400},
      {"{\"host\": \"a.example\", \"key\": \"" + std::string(kKey) + "\"}", 400},
      {"{\"host\": \"a.example\", \"key\": \"" + std::string(kKey) + "\", \"urlList\": [1]}", 400},
      {"{\"host\": \"a.example\", \"key\": \"" + std::string(kKey) + "\", \"keyLocation\": 5, \"urlList\": []}", 400},
      {post("a.example", kKey, "", {}), 400},
      {many, 400},
      {post("a.example", "short", "", {"http://a.example/x"}), 422},
      {post("a.example", "has_underscore_1234", "", {"http://a.example/x"}), 422},
      {post("a.example", std::string(129, 'k'), "", {"http://a.example/x"}), 422},
      {post("a.example", kKey, "", {"http://b.example/x"}), 422},
      {post("a.example", kKey, "", {"http://a.example.evil.org/x"}), 422},
      {post("a.example", kKey, "", {"http://user@a.example/x"}), 422},
      {post("a.example", kKey, "", {"ftp://a.example/x"}), 422},
      {post("a.example", kKey, "http://b.example/key.txt", {"http://a.example/x"}), 422},
      {post("a.example", kKey, "http://a.example/key.txt?x=1", {"http://a.example/x"}), 422},
  };
  for (const auto& [body, status] : posts) {
    auto r = parsePost(body);
    ASSERT_TRUE(std::holds_alternative<Refusal>(r)) << body.substr(0, 200);
    EXPECT_EQ(std::get<Refusal>(r).status, status) << body.substr(0, 200);
    EXPECT_FALSE(std::get<Refusal>(r).message.empty());
  }
  EXPECT_EQ(std::get<Refusal>(parseGet(http::Request{})).status, 400);
  EXPECT_EQ(std::get<Refusal>(parseGet(get("http://a.example/x", "bad key!"))).status, 422);
  EXPECT_EQ(std::get<Refusal>(parseGet(get("javascript:alert(1)", kKey))).status, 422);
}

// Issue 25: the body is read as SAX events; a flat object is all IndexNow sends, so
// anything nested deeper than an array or object in a member is refused with 400
// (the old reader built a DOM of whatever came, and skipped members it did not read).
TEST(IndexNowRequestTest, TheBodyIsAFlatObjectAndAnythingDeeperIs400) {
  const std::string head = "{\"host\": \"a.example\", \"key\": \"" + std::string(kKey) + "\", ";
  const std::string list = "\"urlList\": [\"http://a.example/x\"]";
  auto taken = parsePost(head + "\"note\": \"hi\", \"tags\": [1, \"a\"], \"meta\": {\"n\": 1}, " + list + "}");
  ASSERT_TRUE(std::holds_alternative<Submission>(taken)) << std::get<Refusal>(taken).message;
  EXPECT_EQ(std::get<Submission>(taken).urls, std::vector<std::string>{"http://a.example/x"});
  const std::vector<std::string> refused = {
      head + "\"meta\": {\"deeper\": {\"n\": 1}}, " + list + "}",
      head + "\"tags\": [[1]], " + list + "}",
      head + list + ", \"x\": " + std::string(100, '[') + std::string(100, ']') + "}",
      head + "\"urlList\": [[\"http://a.example/x\"]]}",
      head + "\"urlList\": [{\"url\": \"http://a.example/x\"}]}",
      head + list + ", " + list + "}",
      head + "\"key\": \"" + std::string(kKey) + "\", " + list + "}",
      head + "\"host\": {\"name\": \"a.example\"}, " + list + "}",
      std::string(100'000, '['),
      std::string(50'000, '[') + std::string(50'000, ']'),
      // a NUL ends nlohmann's input: what follows one must not go unread (found by indexnow_fuzz)
      head + list + "}" + std::string(3, '\0') + "u[[[[[[",
      head + "\"urlList\": [\"http://a.example/x" + std::string(1, '\0') + "\"]}",
  };
  for (const auto& body : refused) {
    auto r = parsePost(body);
    ASSERT_TRUE(std::holds_alternative<Refusal>(r)) << body.substr(0, 200);
    EXPECT_EQ(std::get<Refusal>(r).status, 400) << body.substr(0, 200);
  }
  EXPECT_THAT(std::get<Refusal>(parsePost(refused[0])).message, HasSubstr("deeper than a flat"));
  EXPECT_THAT(std::get<Refusal>(parsePost(refused[5])).message, HasSubstr("\"urlList\" is given twice"));
}

TEST(IndexNowRequestTest, TheTenThousandAndFirstUrlEndsTheReading) {
  std::string body = "{\"host\": \"a.example\", \"key\": \"" + std::string(kKey) + "\", \"urlList\": [";
  for (int i = 0; i < 10'001; ++i) body += "\"http://a.example/x\",";
  body += "1 2 3 not json at all";  // never read: the reader stopped at URL 10,001
  auto r = parsePost(body);
  ASSERT_TRUE(std::holds_alternative<Refusal>(r));
  EXPECT_EQ(std::get<Refusal>(r).status, 400);
  EXPECT_THAT(std::get<Refusal>(r).message, HasSubstr("more than 10,000 URLs"));
}

TEST(IndexNowRequestTest, KeysAreEightTo128LettersDigitsAndDashes) {
  EXPECT_TRUE(validKey("abcd-123"));
  EXPECT_TRUE(validKey(std::string(128, 'Z')));
  EXPECT_FALSE(validKey("abc-123"));
  EXPECT_FALSE(validKey(std::string(129, 'a')));
  EXPECT_FALSE(validKey("abcd 1234"));
  EXPECT_FALSE(validKey("abcd\x00" "1234"));
}

}  // namespace
}  // namespace lcc::indexnow
