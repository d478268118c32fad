// Streaming keeps memory bounded: 200 000 records exported through the CU port as XML
// (content off) and as tar.gz (records of another machine: MANIFEST.xml only, which
// the exporter spools to a file), read by a client; the process's peak RSS stays under
// 256 MB and the exports add little to what the store itself holds. (The 1M-record
// figure is measured by bench/export_bench; see docs/benchmarks.md.)
#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <fstream>
#include <iostream>
#include <thread>

#include "capi/cu_client.h"
#include "common/config/config.h"
#include "cu/cu_server.h"
#include "cu_test_util.h"
#include "support/sanitizer.h"

namespace lcc {
namespace {

std::uint64_t statusKb(const std::string& key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::stoull(line.substr(key.size() + 1));
  }
  return 0;
}

TEST(ExportMemory, TwoHundredThousandRecordsStayBounded) {
  if (testing::kUnderSanitizer) {
    GTEST_SKIP() << "the RSS of a sanitized process is not the program's";
  }
  constexpr int kRecords = 200000;
  cutest::CuWorld w;
  std::vector<ContentRecord> batch;
  for (int i = 1; i <= kRecords; ++i) {
    ContentRecord r;
    r.key = {static_cast<ProviderId>(1 + i % 5), "http://site" + std::to_string(i % 97) + ".example.org/docs/page" + std::to_string(i) + ".html", "text/html"};
    r.seq = static_cast<ChangeSeq>(i);
    r.size = 1000 + i % 5000;
    r.md5 = "0123456789abcdef0123456789abcdef";
    r.machine = "m2";  // not this machine: no content files needed
    r.filename = "00/00/" + std::to_string(i);
    r.stored = fromUnixMillis(1714564800000 + i);
    batch.push_back(std::move(r));
    if (batch.size() == 10000) {
      w.putMany(batch);
      batch.clear();
    }
  }
  auto t0 = std::chrono::steady_clock::now();
  auto engine = w.makeEngine();
  boost::asio::io_context io;
  auto guard = boost::asio::make_work_guard(io);
  cu::CuServerOptions o = cu::CuServerOptions::fromConfig(Config::defaults());
  o.listen = "127.0.0.1:0";
  cu::CuServer server(io, *engine, w.clock(), o);
  ASSERT_TRUE(server.start().isOk());
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) threads.emplace_back([&io] { io.run(); });

  const std::uint64_t before_kb = statusKb("VmRSS");
  for (const char* format : {"xml", "tar.gz"}) {
    proto::CuQuery q;
    q.format = format;
    std::uint64_t bytes = 0;
    std::string tail;
    Status s = capi::rawQuery(capi::Endpoint{"127.0.0.1", server.port()}, q, 60000, [&](std::string_view b) {
      bytes += b.size();
      tail = std::string(b.substr(b.size() > 64 ? b.size() - 64 : 0));
      return Status::ok();
    });
    ASSERT_TRUE(s.isOk()) << s.toString();
    std::cout << format << ": " << bytes << " bytes, "
              << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count()
              << " ms since the store was loaded\n";
    EXPECT_GT(bytes, 1000000u) << format;
    if (std::string(format) == "xml") {
      EXPECT_NE(tail.find("</lococa:result>"), std::string::npos);
    }
  }
  const std::uint64_t peak_kb = statusKb("VmHWM");
  std::cout << "RSS before the exports " << before_kb / 1024 << " MB, peak " << peak_kb / 1024 << " MB\n";
  EXPECT_LT(peak_kb, 256u * 1024) << "peak RSS over 256 MB";
  EXPECT_LT(peak_kb - std::min(peak_kb, before_kb), 64u * 1024) << "the exports grew RSS by more than 64 MB";
  server.stop();
  guard.reset();
  io.stop();
  for (auto& t : threads) t.join();
}

}  // namespace
}  // namespace lcc
