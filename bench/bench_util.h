// bench_util.h — small helpers shared by the benchmark programs.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace lcc::bench {

// CPU seconds (user + system, all threads) this process used so far.
double cpuSeconds();
// Resident set size of this process in bytes (VmRSS), 0 when unknown.
std::uint64_t rssBytes();
// A field of /proc/self/status given in kB ("VmHWM", "RssAnon", ...), in bytes; 0 when unknown.
std::uint64_t statusBytes(const std::string& field);
// "RSS x MiB (anonymous a, file-backed f, shared s), VmHWM h MiB": where the memory is.
std::string memoryLine();
// Bytes the files under `path` occupy on disk (st_blocks * 512) and their apparent size.
struct DiskUse {
  std::uint64_t allocated = 0;
  std::uint64_t apparent = 0;
};
DiskUse diskUse(const std::string& path);
// A fresh folder under $TMPDIR (default /tmp); removed by removeTree().
std::string makeTempDir(const std::string& tag);
void removeTree(const std::string& path);

// Latencies in microseconds -> percentile (0..100).
double percentile(std::vector<double> v, double p);

// One line of machine facts for the report: CPU model, cores, kernel, file system of `path`.
std::string machineLine(const std::string& path);

class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }
  double micros() const { return seconds() * 1e6; }

 private:
  std::chrono::steady_clock::time_point start_;
};

}  // namespace lcc::bench
