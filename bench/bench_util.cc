#include "bench_util.h"

#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

namespace lcc::bench {

double cpuSeconds() {
  struct rusage ru;
  if (::getrusage(RUSAGE_SELF, &ru) != 0) return 0;
  auto sec = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6; };
  return sec(ru.ru_utime) + sec(ru.ru_stime);
}

std::uint64_t statusBytes(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::string key = field + ":";
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) return std::stoull(line.substr(key.size())) * 1024;
  }
  return 0;
}

std::uint64_t rssBytes() { return statusBytes("VmRSS"); }

std::string memoryLine() {
  char buf[200];
  auto m = [](const char* f) { return static_cast<double>(statusBytes(f)) / (1 << 20); };
  std::snprintf(buf, sizeof buf, "RSS %.1f MiB (anonymous %.1f, file-backed %.1f, shared %.1f), VmHWM %.1f MiB",
                m("VmRSS"), m("RssAnon"), m("RssFile"), m("RssShmem"), m("VmHWM"));
  return buf;
}

DiskUse diskUse(const std::string& path) {
  DiskUse u;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(path, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    struct stat st;
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    u.allocated += static_cast<std::uint64_t>(st.st_blocks) * 512;
    u.apparent += static_cast<std::uint64_t>(st.st_size);
  }
  return u;
}

std::string makeTempDir(const std::string& tag) {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/lcc-bench-" + tag + "-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) return {};
  return tmpl;
}

void removeTree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  std::size_t i = static_cast<std::size_t>(p / 100.0 * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

std::string machineLine(const std::string& path) {
  std::string cpu = "unknown CPU";
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      cpu = line.substr(line.find(':') + 2);
      break;
    }
  }
  struct utsname u;
  ::uname(&u);
  std::string fs = "?";
  struct statfs sf;
  if (::statfs(path.c_str(), &sf) == 0) {
    fs = sf.f_type == 0xEF53 ? "ext4" : sf.f_type == 0x01021994 ? "tmpfs" : sf.f_type == 0x58465342 ? "xfs" : "fs-0x" + [&] {
      char b[32];
      std::snprintf(b, sizeof b, "%lx", static_cast<unsigned long>(sf.f_type));
      return std::string(b);
    }();
  }
  return cpu + ", " + std::to_string(std::thread::hardware_concurrency()) + " cores, Linux " + u.release + ", " + fs +
         " at " + path;
}

}  // namespace lcc::bench
