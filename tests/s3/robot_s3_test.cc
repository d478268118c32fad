// A robot whose files go to the object store (issue 31 §1), against the fixture's Ceph
// RADOS Gateway: the fetched body is PUT under <machine>/<file> with its Content-MD5
// before the robot answers, the temporary file goes, and a PUT the store refuses (a
// wrong secret: 403; bytes that are not their MD5: 400) is a failed, retryable fetch
// (140) that leaves no object and no file behind.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <future>
#include <thread>

#include "bot/robot.h"
#include "common/config/config.h"
#include "common/md5.h"
#include "common/posix_env.h"
#include "s3/s3_client.h"
#include "support/mocks.h"
#include "support/rgw_env.h"
#include "support/temp_dir.h"

namespace lcc::bot {
namespace {

using ::testing::_;
using ::testing::Invoke;

class RobotS3Test : public ::testing::Test {
 protected:
  void SetUp() override {
    LCC_SKIP_WITHOUT_RGW();
    opts_ = lcc::testing::rgwOptions("lcc-robot-test");
    client_ = std::make_unique<s3::S3Client>(opts_);
    Status made = client_->createBucket();
    ASSERT_TRUE(made.isOk()) << made.message();
    content_ = dir_.path() + "/content";
    std::filesystem::create_directories(content_ + "/00/00");
  }
  void TearDown() override {
    for (auto& t : threads_) t.join();
  }

  // The fetcher writes `body` into the temporary file and reports `md5` (a fetcher
  // thread, never inside start()).
  void fetcherWrites(const std::string& body, const std::string& md5) {
    EXPECT_CALL(fetcher_, start(_, _)).WillOnce(Invoke([this, body, md5](const FetchRequest& req, FetchDone done) {
      threads_.emplace_back([req, done, body, md5] {
        (void)posixEnv()->writeFileAtomic(req.path, body);
        FetchResult r;
        r.id = req.id;
        r.http_status = 200;
        r.mime = "text/html";
        r.size = body.size();
        r.md5 = md5;
        r.response_head = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n";
        done(r);
      });
      return Status::ok();
    }));
  }

  // Runs one fetch of 00/00/2a through a RobotCore whose uploader uses `store`; returns
  // the answer and whether the object existed when the answer was made.
  FetchResult fetchOne(const s3::S3Options& store, bool* object_at_answer, bool hello = true) {
    RobotOptions o = RobotOptions::fromConfig(Config::defaults());
    o.content_root = content_;
    o.uploader = std::make_shared<s3::Uploader>(store);
    std::promise<FetchResult> answer;
    auto core = std::make_shared<RobotCore>(fetcher_, *posixEnv(), o, &counters_, [&](const FetchResult& r) {
      // The PUT was answered before this: the object is there (or was refused).
      *object_at_answer = client_->getString("m1/00/00/2a", 1u << 20).isOk();
      answer.set_value(r);
    });
    if (hello) core->setMachine("m1");
    FetchRequest f;
    f.id = 42;
    f.url = "http://127.0.0.1:9/a.html";
    f.path = content_ + "/00/00/2a";
    f.expected_mime = "text/html";
    core->fetch(f);
    auto fut = answer.get_future();
    EXPECT_EQ(fut.wait_for(std::chrono::seconds(60)), std::future_status::ready);
    FetchResult r = fut.get();
    o.uploader->stop();
    return r;
  }

  std::vector<std::string> filesLeft() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::recursive_directory_iterator(content_)) {
      if (e.is_regular_file()) out.push_back(e.path().string());
    }
    return out;
  }

  lcc::testing::TempDir dir_;
  std::string content_;
  s3::S3Options opts_;
  std::unique_ptr<s3::S3Client> client_;
  ::testing::NiceMock<lcc::testing::MockFetcher> fetcher_;
  RobotCounters counters_;
  std::vector<std::thread> threads_;
};

TEST_F(RobotS3Test, TheBodyIsAnObjectBeforeTheAnswerAndNoFileStays) {
  (void)client_->remove("m1/00/00/2a");
  const std::string body(100000, 'x');
  fetcherWrites(body, Md5::of(body));
  bool there = false;
  FetchResult r = fetchOne(opts_, &there);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_EQ(r.id, 42u);
  EXPECT_EQ(r.size, body.size());
  EXPECT_EQ(r.md5, Md5::of(body));
  EXPECT_TRUE(there) << "the answer came before the object";
  EXPECT_EQ(client_->getString("m1/00/00/2a", 1u << 20).valueOr(""), body);
  EXPECT_TRUE(filesLeft().empty()) << filesLeft()[0];
  EXPECT_EQ(counters_.fetched.load(), 1u);
  s3::S3GetInfo info;
  std::function<bool(std::string_view)> sink = [](std::string_view) { return true; };
  ASSERT_TRUE(client_->get("m1/00/00/2a", sink, &info).isOk());
  EXPECT_FALSE(info.response_head.empty()) << "the head is kept as the object's metadata";
}

TEST_F(RobotS3Test, APutWithAWrongSecretIsARetryableFailureThatLeavesNothing) {
  (void)client_->remove("m1/00/00/2a");
  const std::string body = "some bytes";
  fetcherWrites(body, Md5::of(body));
  s3::S3Options bad = opts_;
  bad.secret_key = "not-the-secret";
  bool there = true;
  FetchResult r = fetchOne(bad, &there);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.code, ErrorCode::kInternal);  // 140: the QM fetches the URL again
  EXPECT_NE(r.message.find("403"), std::string::npos) << r.message;
  EXPECT_EQ(r.message.find("not-the-secret"), std::string::npos);
  EXPECT_FALSE(there);
  EXPECT_TRUE(filesLeft().empty());
  EXPECT_EQ(counters_.failed.load(), 1u);
}

TEST_F(RobotS3Test, BytesThatAreNotTheirMd5AreRefusedAndLeaveNothing) {
  (void)client_->remove("m1/00/00/2a");
  fetcherWrites("the bytes written", Md5::of("the bytes the fetcher thinks it wrote"));
  bool there = true;
  FetchResult r = fetchOne(opts_, &there);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.code, ErrorCode::kInternal);
  EXPECT_NE(r.message.find("400"), std::string::npos) << r.message;
  EXPECT_FALSE(there);
  EXPECT_TRUE(filesLeft().empty());
}

TEST_F(RobotS3Test, WithoutTheBotmsMachineThereIsNoKeyAndTheFetchFails) {
  fetcherWrites("bytes", Md5::of("bytes"));
  bool there = true;
  (void)client_->remove("m1/00/00/2a");
  FetchResult r = fetchOne(opts_, &there, /*hello=*/false);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.code, ErrorCode::kInternal);
  EXPECT_FALSE(there);
  EXPECT_TRUE(filesLeft().empty());
}

}  // namespace
}  // namespace lcc::bot
