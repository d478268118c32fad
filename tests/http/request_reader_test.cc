// The request reader (core/http/request_reader.h) gives the same answer however the bytes
// of a request are cut, as a connection receives them (the property fuzz/
// http_request_properties.cc checks on random bytes; these are the cases it found).
#include "http/request_reader.h"

#include <gtest/gtest.h>

#include <string>

namespace lcc::http {
namespace {

const RequestLimits kLimits{1024, 4096};

std::string chunkedPost(const std::string& first_chunk_line) {
  return "POST /indexnow HTTP/1.1\r\nHost: lcc\r\nContent-Type: application/json\r\n"
         "Transfer-Encoding: chunked\r\n\r\n" +
         first_chunk_line;
}

// Beast takes a chunk's size off its body limit each time it retries a chunk line whose
// extension is incomplete; fed a byte at a time, a bad line used to be 413, not 400.
TEST(RequestReaderTest, ABadChunkLineIsRefused400HoweverItArrives) {
  // a quoted extension left open across the line's end, then more than a line may hold
  const std::string bad_extension = chunkedPost("5;name=\"nt-Type:" + std::string(1, '\0') + "app\r\nTE: c\r\n\r\n5;x\r\n" +
                                                std::string(1100, 'a'));
  const std::string long_line = chunkedPost("5;name=\"nt-" + std::string(1100, '\xff') + "\r\nhello\r\n0\r\n\r\n");
  for (const std::string& bytes : {bad_extension, long_line}) {
    for (std::size_t piece : {0, 1, 2, 7, 1500}) {
      const ReadOutcome o = readRequest(bytes, kLimits, piece);
      EXPECT_EQ(o.status, 400) << "piece " << piece << ": " << o.reason;
      EXPECT_FALSE(o.request.has_value());
    }
  }
}

TEST(RequestReaderTest, ChunksOverTheBodyLimitAre413AndUnderItAreRead) {
  std::string body;
  for (int i = 0; i < 4; ++i) body += "400\r\n" + std::string(1024, 'a') + "\r\n";  // 4 × 1 KiB = max_body
  for (std::size_t piece : {0, 1, 7, 1500}) {
    const ReadOutcome ok = readRequest(chunkedPost(body + "0\r\n\r\n"), kLimits, piece);
    ASSERT_TRUE(ok.request.has_value()) << "piece " << piece << ": " << ok.status << " " << ok.reason;
    EXPECT_EQ(ok.request->body().size(), 4096u);
    const ReadOutcome over = readRequest(chunkedPost(body + "1\r\nb\r\n0\r\n\r\n"), kLimits, piece);
    EXPECT_EQ(over.status, 413) << "piece " << piece << ": " << over.reason;
  }
}

}  // namespace
}  // namespace lcc::http
