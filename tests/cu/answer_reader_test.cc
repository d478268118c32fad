// The C API's answer reader (core/capi/cu_client.cc) against a CU stand-in on 127.0.0.1
// that sends its answer in pieces, with pauses at the places a real server's writes
// may split it. A record must come out of next() with what follows its <url> tag
// (whether it has content) already read.
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "capi/cu_client.h"
#include "support/loopback.h"

namespace lcc {
namespace {

using namespace std::chrono_literals;

// Accepts one connection, reads the query's first bytes, then writes `pieces` in turn
// with a pause before each but the first, and closes.
class PiecewiseServer {
 public:
  explicit PiecewiseServer(std::vector<std::string> pieces) : pieces_(std::move(pieces)) {
    fd_ = testing::listenLoopback(&port_);
    EXPECT_GE(fd_, 0);
    thread_ = std::thread([this] { serve(); });
  }
  ~PiecewiseServer() {
    thread_.join();
    ::close(fd_);
  }
  capi::Endpoint endpoint() const { return capi::Endpoint{"127.0.0.1", port_}; }

 private:
  void serve() {
    int c = ::accept(fd_, nullptr, nullptr);
    if (c < 0) return;
    timeval tv{10, 0};
    ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char buf[4096];
    (void)::recv(c, buf, sizeof buf, 0);  // the query; its content does not matter here
    for (std::size_t i = 0; i < pieces_.size(); ++i) {
      if (i > 0) std::this_thread::sleep_for(150ms);  // the client has read what came before
      (void)::send(c, pieces_[i].data(), pieces_[i].size(), MSG_NOSIGNAL);
    }
    ::close(c);
  }

  std::vector<std::string> pieces_;
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::thread thread_;
};

struct Read {
  std::string url;
  bool has_content = false;
  std::string missing;
  std::string content;
};

std::vector<Read> readAll(const capi::Endpoint& ep) {
  std::vector<Read> out;
  auto sock = capi::Socket::connect(ep, 10000);
  EXPECT_TRUE(sock.isOk());
  if (!sock.isOk()) return out;
  EXPECT_TRUE((*sock)->writeAll("<query/>").isOk());
  capi::AnswerReader r(std::move(sock).value());
  EXPECT_TRUE(r.start().isOk());
  for (;;) {
    auto rec = r.next();
    EXPECT_TRUE(rec.isOk()) << rec.status().toString();
    if (!rec.isOk() || *rec == nullptr) break;
    Read got{(*rec)->url, (*rec)->has_content, (*rec)->content_missing, ""};
    char buf[7];
    for (;;) {
      auto k = r.readContent(buf, sizeof buf);
      EXPECT_TRUE(k.isOk());
      if (!k.isOk() || *k == 0) break;
      got.content.append(buf, *k);
    }
    out.push_back(got);
  }
  return out;
}

const std::string kHead =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<lococa:result xmlns:lococa=\"http://www.lococa.org/1.0\" count=\"3\" last_seq=\"3\">";

TEST(AnswerReader, ARecordSplitAfterItsUrlTagStillShowsItsContent) {
  // "hello" in base64 is aGVsbG8=; the answer pauses after each <url> tag, as a CU that
  // reads the content from another machine does.
  PiecewiseServer server({kHead + "<url c=\"http://h/a\" seq=\"1\" sz=\"5\">",
                          "<content encoding=\"base64\">aGVs", "bG8=</content></url>"
                          "<url c=\"http://h/b\" seq=\"2\" sz=\"5\">",
                          "<content missing=\"unreachable\"/></url><url c=\"http://h/c\" seq=\"3\" sz=\"0\">",
                          "</url></lococa:result>"});
  auto got = readAll(server.endpoint());
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].url, "http://h/a");
  EXPECT_TRUE(got[0].has_content);
  EXPECT_EQ(got[0].content, "hello");
  EXPECT_EQ(got[1].url, "http://h/b");
  EXPECT_FALSE(got[1].has_content);
  EXPECT_EQ(got[1].missing, "unreachable");
  EXPECT_EQ(got[2].url, "http://h/c");
  EXPECT_FALSE(got[2].has_content);
  EXPECT_TRUE(got[2].missing.empty());
}

}  // namespace
}  // namespace lcc
