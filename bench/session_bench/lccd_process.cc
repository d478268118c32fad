#include "session_bench/lccd_process.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

namespace lcc::bench {

std::uint16_t freeLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  std::uint16_t port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(fd);
  return port;
}

int connectLoopback(std::uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

std::vector<Links> parseLinks(const std::string& v) {
  if (v == "xml") return {Links::kXml};
  if (v == "tcp") return {Links::kFrames};
  if (v == "process") return {Links::kInProcess};
  if (v == "both") return {Links::kFrames, Links::kInProcess};
  if (v == "all") return {Links::kXml, Links::kFrames, Links::kInProcess};
  return {};
}

const char* linksName(Links l) {
  switch (l) {
    case Links::kXml: return "over TCP as XML";
    case Links::kFrames: return "over TCP as frames";
    case Links::kInProcess: return "in process";
  }
  return "?";
}

LccdProcess::LccdProcess(std::string work_dir, std::vector<std::string> roles, std::string extra,
                         const std::vector<std::string>& more_listeners, Links links)
    : work_(std::move(work_dir)), config_(work_ + "/lcc.yaml") {
  for (const char* l : {"uns", "qm", "botm", "robots", "cu", "http"}) ports_[l] = freeLoopbackPort();
  for (const auto& l : more_listeners) ports_[l] = freeLoopbackPort();
  std::ofstream f(config_);
  f << "node:\n  data_dir: " << work_ << "/var\n  machine_id: m1\n  in_process_links: "
    << (links == Links::kInProcess ? "true" : "false") << "\n  link_frames: " << (links == Links::kXml ? "false" : "true")
    << "\nroles: [";
  for (std::size_t i = 0; i < roles.size(); ++i) f << (i ? ", " : "") << roles[i];
  f << "]\nlisten:\n";
  for (const auto& [name, port] : ports_) f << "  " << name << ": 127.0.0.1:" << port << "\n";
  f << "storage:\n  plugin_dir: " << LCC_PLUGIN_DIR << "\nlog:\n  level: warn\n  file: " << work_ << "/lccd.log\n"
    << extra;
}

LccdProcess::~LccdProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

bool LccdProcess::start(const std::string& binary) {
  const std::string bin = binary.empty() ? std::string(LCC_BIN_DIR) + "/lccd" : binary;
  pid_ = ::fork();
  if (pid_ == 0) {
    ::execl(bin.c_str(), "lccd", "-c", config_.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  for (int i = 0; i < 300; ++i) {
    if (int fd = connectLoopback(ports_.at("http")); fd >= 0) {
      ::close(fd);
      return true;
    }
    if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
      pid_ = -1;
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

bool LccdProcess::stop() {
  if (pid_ <= 0) return false;
  ::kill(pid_, SIGTERM);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

namespace {
std::uint64_t procStatusKb(pid_t pid, const char* field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0) return std::stoull(line.substr(std::string(field).size())) * 1024;
  }
  return 0;
}
}  // namespace

std::uint64_t LccdProcess::peakRss() const { return pid_ > 0 ? procStatusKb(pid_, "VmHWM:") : 0; }
std::uint64_t LccdProcess::rss() const { return pid_ > 0 ? procStatusKb(pid_, "VmRSS:") : 0; }

double LccdProcess::cpuSeconds() const {
  std::ifstream in("/proc/" + std::to_string(pid_) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto paren = stat.rfind(')');  // the command name may hold spaces
  if (pid_ <= 0 || paren == std::string::npos) return 0;
  std::istringstream fields(stat.substr(paren + 2));
  std::string f;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i == 14 || i == 15) ticks += std::stod(f);  // utime, stime
  }
  return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

std::string LccdProcess::lcc(const std::vector<std::string>& args) const {
  std::string cmd = std::string(LCC_BIN_DIR) + "/lcc --config '" + config_ + "'";
  for (const auto& a : args) cmd += " '" + a + "'";
  std::string out;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    std::array<char, 4096> buf;
    while (std::size_t n = std::fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
    if (::pclose(p) != 0) out.clear();
  }
  return out;
}

}  // namespace lcc::bench
