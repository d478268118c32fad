// core/s3's client against a real Ceph RADOS Gateway (the fixture lcc_rgw_server):
// PUT/GET/LIST/DELETE round trips, and the two refusals the store must make: a request
// signed with a wrong secret (403) and a body that is not what its Content-MD5 says (400).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <random>
#include <set>

#include "common/config/config.h"
#include "common/md5.h"
#include "support/rgw_env.h"
#include "s3/s3_client.h"
#include "s3/s3_list.h"
#include "s3/s3_reader.h"
#include "support/temp_dir.h"

namespace lcc::s3 {
namespace {

using lcc::testing::rgwOptions;

std::string randomBytes(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

void writeFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

class S3ClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LCC_SKIP_WITHOUT_RGW();
    client_ = std::make_unique<S3Client>(rgwOptions(bucket_));
    Status made = client_->createBucket();
    ASSERT_TRUE(made.isOk()) << made.message();
  }
  static std::string bucketFor(std::string test) {
    std::string out = "lcc-client-";
    for (char c : test.substr(0, 40)) out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    return out;
  }
  // One bucket per test (S3 names: lower case, at most 63).
  std::string bucket_ = bucketFor(::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::unique_ptr<S3Client> client_;
  lcc::testing::TempDir dir_;
};

TEST_F(S3ClientTest, APutFileComesBackByteForByteAndIsListedAndDeleted) {
  // 3 MiB: more than one read of the upload callback and of the answer.
  const std::string body = randomBytes(3u << 20, 1);
  writeFile(dir_.file("body"), body);
  ASSERT_TRUE(client_->putFile("m1/00/00/7b", dir_.file("body"), Md5::of(body)).isOk());

  auto got = client_->getString("m1/00/00/7b", 8u << 20);
  ASSERT_TRUE(got.isOk()) << got.status().message();
  EXPECT_TRUE(*got == body);

  auto page = client_->list("m1/", "");
  ASSERT_TRUE(page.isOk()) << page.status().message();
  ASSERT_EQ(page->objects.size(), 1u);
  EXPECT_EQ(page->objects[0].key, "m1/00/00/7b");
  EXPECT_EQ(page->objects[0].size, body.size());
  EXPECT_TRUE(page->next_token.empty());

  ASSERT_TRUE(client_->remove("m1/00/00/7b").isOk());
  EXPECT_TRUE(client_->getString("m1/00/00/7b", 100).status().isNotFound());
  EXPECT_TRUE(client_->list("m1/", "")->objects.empty());
  EXPECT_TRUE(client_->remove("m1/00/00/7b").isOk()) << "a repeated delete is no failure";
}

TEST_F(S3ClientTest, AWrongSecretIsRefusedWith403AndStoresNothing) {
  S3Options bad = rgwOptions(bucket_);
  bad.secret_key = "not-the-secret";
  S3Client wrong(bad);
  Status s = wrong.putBytes("m1/00/00/01", "hello");
  EXPECT_FALSE(s.isOk());
  EXPECT_EQ(wrong.lastHttpStatus(), 403);
  EXPECT_NE(s.message().find("SignatureDoesNotMatch"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find("not-the-secret"), std::string::npos) << "the secret is never in a message";
  EXPECT_TRUE(client_->getString("m1/00/00/01", 100).status().isNotFound());
  EXPECT_FALSE(wrong.getString("m1/00/00/01", 100).isOk());
  EXPECT_EQ(wrong.lastHttpStatus(), 403);
}

TEST_F(S3ClientTest, ABodyThatIsNotItsContentMd5IsRefusedWith400AndStoresNothing) {
  writeFile(dir_.file("body"), "the bytes on disk");
  Status s = client_->putFile("m1/00/00/02", dir_.file("body"), Md5::of("other bytes"));
  EXPECT_FALSE(s.isOk());
  EXPECT_EQ(client_->lastHttpStatus(), 400);
  EXPECT_NE(s.message().find("BadDigest"), std::string::npos) << s.message();
  EXPECT_TRUE(client_->getString("m1/00/00/02", 100).status().isNotFound());
}

TEST_F(S3ClientTest, ListingPagesThroughContinuationTokensSeesEveryKeyOnce) {
  std::set<std::string> put;
  for (int i = 0; i < 23; ++i) {
    std::string key = "m2/00/" + std::to_string(i / 10) + "/" + std::to_string(i);
    ASSERT_TRUE(client_->putBytes(key, std::string("x").append(std::to_string(i))).isOk());
    put.insert(key);
  }
  ASSERT_TRUE(client_->putBytes("m3/00/00/1", "other machine").isOk());
  std::set<std::string> seen;
  std::string token;
  int pages = 0;
  do {
    auto page = client_->list("m2/", token, 10);
    ASSERT_TRUE(page.isOk()) << page.status().message();
    for (const auto& o : page->objects) EXPECT_TRUE(seen.insert(o.key).second) << o.key << " listed twice";
    token = page->next_token;
  } while (!token.empty() && ++pages < 10);
  EXPECT_EQ(pages, 2);  // 10 + 10 + 3
  EXPECT_EQ(seen, put);
}

TEST_F(S3ClientTest, AReaderThatStopsEndsTheTransfer) {
  ASSERT_TRUE(client_->putBytes("m1/00/00/03", randomBytes(1u << 20, 2)).isOk());
  std::size_t got = 0;
  std::function<bool(std::string_view)> sink = [&](std::string_view b) {
    got += b.size();
    return false;
  };
  Status s = client_->get("m1/00/00/03", sink);
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_LT(got, 1u << 20);
  EXPECT_EQ(client_->getString("m1/00/00/03", 1000).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(S3ClientTest, AReaderPullsAnObjectPieceByPieceAndRefusesBeforeAByte) {
  const std::string body = randomBytes((3u << 20) + 17, 3);
  ASSERT_TRUE(client_->putBytes("m1/00/00/04", body).isOk());
  auto reader = S3Reader::open(rgwOptions(bucket_), "m1/00/00/04");
  ASSERT_TRUE(reader.isOk()) << reader.status().message();
  EXPECT_EQ((*reader)->size(), body.size());
  std::string got;
  char buf[1000];
  for (int i = 0; i < 10000; ++i) {  // 3 MiB in 1000-byte reads: well under 10 000
    auto n = (*reader)->read(buf, sizeof buf);
    ASSERT_TRUE(n.isOk()) << n.status().message();
    if (*n == 0) break;
    got.append(buf, *n);
  }
  EXPECT_TRUE(got == body) << got.size() << " of " << body.size() << " bytes";

  EXPECT_TRUE(S3Reader::open(rgwOptions(bucket_), "m1/00/00/05").status().isNotFound());
  S3Options bad = rgwOptions(bucket_);
  bad.secret_key = "wrong";
  auto refused = S3Reader::open(bad, "m1/00/00/04");
  ASSERT_FALSE(refused.isOk());
  EXPECT_NE(refused.status().message().find("403"), std::string::npos) << refused.status().message();
}

TEST(S3Client, AStoreThatIsNotThereIsAnIoErrorWithinTheConnectTimeout) {
  S3Options o = rgwOptions("lcc-nowhere");
  o.endpoint = "http://127.0.0.1:1";  // nothing listens on port 1
  o.access_key = "a";
  o.secret_key = "b";
  o.connect_timeout = Millis(2000);
  o.timeout = Millis(5000);
  S3Client c(o);
  Status s = c.putBytes("k", "v");
  EXPECT_TRUE(s.isIOError()) << s.message();
  EXPECT_EQ(c.lastHttpStatus(), 0);
}

TEST(S3List, ReadsKeysSizesEntitiesAndTheToken) {
  auto p = parseListPage(
      "<?xml version=\"1.0\"?><ListBucketResult><IsTruncated>true</IsTruncated>"
      "<Contents><Key>a/b&amp;c</Key><Size>12</Size></Contents><Contents><Key>d</Key><Size>0</Size></Contents>"
      "<NextContinuationToken>tok/+=</NextContinuationToken></ListBucketResult>");
  ASSERT_TRUE(p.isOk());
  ASSERT_EQ(p->objects.size(), 2u);
  EXPECT_EQ(p->objects[0].key, "a/b&c");
  EXPECT_EQ(p->objects[0].size, 12u);
  EXPECT_EQ(p->next_token, "tok/+=");
  EXPECT_FALSE(parseListPage("<Error><Code>AccessDenied</Code></Error>").isOk());
  EXPECT_FALSE(parseListPage("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>").isOk())
      << "a truncated page without a token would end the listing early";
  EXPECT_FALSE(parseListPage("<ListBucketResult><Contents><Key>x</Key>").isOk());
}

// A store's answer is read by the project's Expat reader within its limits: nesting,
// an endless text or a second document are refused, not held.
TEST(S3List, AHostileAnswerIsRefusedWithinBounds) {
  std::string deep = "<ListBucketResult>";
  for (int i = 0; i < 100; ++i) deep += "<a>";
  EXPECT_FALSE(parseListPage(deep).isOk());
  EXPECT_FALSE(parseListPage("<ListBucketResult><Contents><Key>" + std::string(1 << 20, 'k') +
                             "</Key></Contents></ListBucketResult>")
                   .isOk());
  EXPECT_FALSE(parseListPage("<ListBucketResult/><ListBucketResult/>").isOk());
  auto ok = parseListPage("<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
                          "<Contents><Key><![CDATA[x<y]]></Key></Contents></ListBucketResult>\n");
  ASSERT_TRUE(ok.isOk()) << ok.status().message();
  EXPECT_EQ(ok->objects.at(0).key, "x<y");
}

TEST(S3Encoding, ContentMd5AndKeysAreSpelledAsS3Wants) {
  EXPECT_EQ(contentMd5(Md5::of("hello\n")), "sZRqySSS0jR8YjW00mERhA==");
  EXPECT_EQ(contentMd5("xyz"), "");
  EXPECT_EQ(uriEncode("m1/00/0a/7b", true), "m1/00/0a/7b");
  EXPECT_EQ(uriEncode("a b/+=", false), "a%20b%2F%2B%3D");
}

TEST(S3Options, TheObjectKeyIsPrefixMachineAndFileName) {
  S3Options o;
  o.key_prefix = "lcc-a/";
  EXPECT_EQ(o.objectKey("m1", "00/00/7b"), "lcc-a/m1/00/00/7b");
  EXPECT_EQ(o.machinePrefix("m1"), "lcc-a/m1/");
}

TEST(S3Options, TheSecretComesFromAPrivateFileOnly) {
  lcc::testing::TempDir dir;
  writeFile(dir.file("secret"), "s3cr3t\n");
  ::chmod(dir.file("secret").c_str(), 0644);
  std::vector<ConfigProblem> problems;
  auto cfg = Config::loadText("s3: {endpoint: 'http://127.0.0.1:9', access_key: ak, secret_key_file: secret}\n",
                              "t.yaml", {}, &problems);
  ASSERT_TRUE(cfg.isOk());
  auto o = S3Options::fromConfig(*cfg, dir.path());
  ASSERT_FALSE(o.isOk()) << "a secret others can read is refused";
  EXPECT_NE(o.status().message().find("chmod 600"), std::string::npos);
  EXPECT_EQ(o.status().message().find("s3cr3t"), std::string::npos);
  ::chmod(dir.file("secret").c_str(), 0600);
  o = S3Options::fromConfig(*cfg, dir.path());
  ASSERT_TRUE(o.isOk()) << o.status().message();
  EXPECT_EQ(o->secret_key, "s3cr3t");
  EXPECT_TRUE(o->enabled());
  auto off = S3Options::fromConfig(Config::defaults(), dir.path());
  ASSERT_TRUE(off.isOk());
  EXPECT_FALSE(off->enabled());
}

}  // namespace
}  // namespace lcc::s3
