// lccd as a process: it starts with only the HTTP port (roles: []), writes
// <data_dir>/admin.token with mode 0600, reopens its log file on SIGHUP, tells systemd
// READY=1 and STOPPING=1 through NOTIFY_SOCKET, and exits 0 on SIGTERM. Readiness and
// exit are polled with deadlines, never slept for.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "support/http_test_server.h"
#include "support/temp_dir.h"

namespace lcc {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
constexpr auto kDeadline = std::chrono::seconds(20);

std::uint16_t freePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

// Polls `cond` until it holds or the deadline passes (short pauses between tries).
template <typename F>
bool pollUntil(F&& cond) {
  const auto end = Clock::now() + kDeadline;
  while (!cond()) {
    if (Clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

class LccdProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    lccd_ = std::string(LCC_BIN_DIR) + "/lccd";
    if (!fs::exists(lccd_)) GTEST_SKIP() << lccd_ << " is not built";
    // Private plugin folder with safe modes (the loader refuses group-writable files).
    const std::string plugins = dir_.path() + "/plugins";
    fs::create_directories(plugins);
    for (const char* name : {"storage-memory", "fetch-stub"}) {
      const std::string to = plugins + "/" + name + ".so";
      fs::copy_file(std::string(LCC_PLUGIN_DIR) + "/" + name + ".so", to);
      fs::permissions(to, fs::perms(0755), fs::perm_options::replace);
    }
    port_ = freePort();
    data_dir_ = dir_.path() + "/data";
    config_ = dir_.file("lcc.yaml");
    std::ofstream(config_) << "node:\n  data_dir: " << data_dir_ << "\n  machine_id: m1\n"
                           << "roles: []\n"
                           << "log:\n  level: debug\n"
                           << "listen:\n  http: 127.0.0.1:" << port_ << "\n"
                           << "storage:\n  plugin_dir: " << plugins << "\n"
                           << "  queue: storage-memory\n  content: storage-memory\n  providers: storage-memory\n"
                           << "fetcher: fetch-stub\n"
                           << "exporters: []\n";
  }

  void TearDown() override {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  // `notify_socket`: NOTIFY_SOCKET for lccd (empty: none, as outside systemd).
  void start(const std::string& notify_socket = "") {
    const std::string log = dir_.file("lccd.log");
    pid_ = ::fork();
    ASSERT_GE(pid_, 0);
    if (pid_ == 0) {
      if (notify_socket.empty()) {
        ::unsetenv("NOTIFY_SOCKET");
      } else {
        ::setenv("NOTIFY_SOCKET", notify_socket.c_str(), 1);
      }
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::execl(lccd_.c_str(), lccd_.c_str(), "-c", config_.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
  }

  std::string log() const {
    std::ifstream in(dir_.file("lccd.log"));
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  bool running() {
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exit_status_ = status;
      pid_ = -1;
      return false;
    }
    return r == 0;
  }

  bool httpUp() { return testing::httpTestRequest(port_, "GET", "/status").status != 0; }

  // Waits for the process to end; returns its exit code, or -1 (killed, or timeout).
  int waitExit() {
    if (!pollUntil([&] { return !running(); })) return -1;
    return WIFEXITED(exit_status_) ? WEXITSTATUS(exit_status_) : -1;
  }

  testing::TempDir dir_;
  std::string lccd_, config_, data_dir_;
  std::uint16_t port_ = 0;
  pid_t pid_ = -1;
  int exit_status_ = 0;
};

// Needs the HTTP server (core/http) to listen; a failure shows lccd's log.
TEST_F(LccdProcessTest, StartsWithOnlyTheHttpPortAndStopsOnSigterm) {
  start();
  ASSERT_TRUE(pollUntil([&] { return httpUp() || !running(); })) << log();
  ASSERT_TRUE(running()) << "lccd exited early:\n" << log();
  EXPECT_EQ(testing::httpTestRequest(port_, "GET", "/status").status, 200);
  ASSERT_EQ(::kill(pid_, SIGTERM), 0);
  EXPECT_EQ(waitExit(), 0) << log();
  EXPECT_FALSE(httpUp()) << "the port is closed after exit";
}

TEST_F(LccdProcessTest, WritesAPrivateAdminToken) {
  start();
  ASSERT_TRUE(pollUntil([&] { return fs::exists(data_dir_ + "/admin.token") || !running(); })) << log();
  const std::string token_file = data_dir_ + "/admin.token";
  ASSERT_TRUE(fs::exists(token_file)) << log();
  struct stat st {};
  ASSERT_EQ(::stat(token_file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::ifstream in(token_file);
  std::string token;
  std::getline(in, token);
  EXPECT_GE(token.size(), 32u) << "a long random token";
  EXPECT_EQ(token.find_first_not_of("0123456789abcdef"), std::string::npos) << token;
  ASSERT_TRUE(pollUntil([&] { return httpUp() || !running(); })) << log();
  ::kill(pid_, SIGTERM);
  EXPECT_EQ(waitExit(), 0) << log();

  // A second start keeps the same token.
  start();
  ASSERT_TRUE(pollUntil([&] { return httpUp() || !running(); })) << log();
  std::ifstream again(token_file);
  std::string token2;
  std::getline(again, token2);
  EXPECT_EQ(token2, token);
  ::kill(pid_, SIGTERM);
  EXPECT_EQ(waitExit(), 0) << log();
}

TEST_F(LccdProcessTest, RefusesAnAdminTokenOthersCanRead) {
  fs::create_directories(data_dir_);
  fs::permissions(data_dir_, fs::perms(0700), fs::perm_options::replace);
  const std::string token_file = data_dir_ + "/admin.token";
  std::ofstream(token_file) << "0123456789abcdef0123456789abcdef\n";
  fs::permissions(token_file, fs::perms(0644), fs::perm_options::replace);
  start();
  EXPECT_NE(waitExit(), 0) << log();
  EXPECT_NE(log().find("admin.token"), std::string::npos) << log();
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// logrotate's way: the file is renamed, SIGHUP makes lccd write to a new file at the
// configured path, and the renamed one gets nothing more.
TEST_F(LccdProcessTest, SighupReopensTheLogFileAtTheConfiguredPath) {
  const std::string file = dir_.file("configured.log");
  std::string yaml = slurp(config_);
  const std::string level = "log:\n  level: debug\n";
  yaml.replace(yaml.find(level), level.size(), level + "  file: " + file + "\n");
  std::ofstream(config_, std::ios::trunc) << yaml;
  start();
  ASSERT_TRUE(pollUntil([&] { return httpUp() || !running(); })) << log();
  ASSERT_TRUE(running()) << log();
  ASSERT_TRUE(pollUntil([&] { return slurp(file).find("lccd ready") != std::string::npos; })) << slurp(file) << log();
  const std::string rotated = file + ".1";
  fs::rename(file, rotated);
  ASSERT_EQ(::kill(pid_, SIGHUP), 0);
  ASSERT_TRUE(pollUntil([&] { return slurp(file).find("SIGHUP: log reopened") != std::string::npos || !running(); }))
      << "no new log at " << file << "\nrotated:\n" << slurp(rotated) << log();
  EXPECT_TRUE(running()) << "SIGHUP must not stop lccd:\n" << log();
  EXPECT_TRUE(httpUp());
  ASSERT_EQ(::kill(pid_, SIGTERM), 0);
  EXPECT_EQ(waitExit(), 0) << log();
  const std::string fresh = slurp(file), old = slurp(rotated);
  EXPECT_NE(fresh.find("lccd stopped"), std::string::npos) << fresh;
  EXPECT_NE(old.find("lccd ready"), std::string::npos) << old;
  EXPECT_EQ(old.find("SIGHUP"), std::string::npos) << "the renamed file got lines after the rename:\n" << old;
  EXPECT_EQ(old.find("lccd stopped"), std::string::npos) << old;
}

// A datagram socket like systemd's NOTIFY_SOCKET; reads what lccd sends.
class NotifySocket {
 public:
  explicit NotifySocket(const std::string& path) : path_(path) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    bound_ = fd_ >= 0 && ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~NotifySocket() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool bound() const { return bound_; }
  // Messages until one contains `want` (true) or the deadline passes (false).
  bool waitFor(const std::string& want, std::string* seen) {
    const auto end = Clock::now() + kDeadline;
    while (Clock::now() < end) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char buf[4096];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) continue;
      std::string msg(buf, static_cast<std::size_t>(n));
      *seen += msg + "\n--\n";
      if (msg.find(want) != std::string::npos) return true;
    }
    return false;
  }

 private:
  std::string path_;
  int fd_ = -1;
  bool bound_ = false;
};

TEST_F(LccdProcessTest, TellsSystemdReadyAndStoppingThroughNotifySocket) {
  NotifySocket sock(dir_.file("notify.sock"));
  ASSERT_TRUE(sock.bound()) << std::strerror(errno);
  start(dir_.file("notify.sock"));
  std::string seen;
  ASSERT_TRUE(sock.waitFor("READY=1", &seen)) << seen << log();
  EXPECT_TRUE(httpUp()) << "READY=1 comes once every listener is up";
  EXPECT_NE(seen.find("STATUS="), std::string::npos) << seen;
  ASSERT_EQ(::kill(pid_, SIGTERM), 0);
  EXPECT_TRUE(sock.waitFor("STOPPING=1", &seen)) << seen << log();
  EXPECT_EQ(waitExit(), 0) << log();
}

// How many io threads lccd runs (threads named lccd-io, as `top -H` shows them).
std::size_t ioThreadsOf(pid_t pid) {
  std::size_t n = 0;
  for (const auto& t : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
    std::ifstream comm(t.path() / "comm");
    std::string name;
    std::getline(comm, name);
    n += name == "lccd-io" ? 1 : 0;
  }
  return n;
}

// threads: 0 (the default) is one io thread for a node without roles other than botm
// and bot, two otherwise; a number is taken as it is.
TEST_F(LccdProcessTest, IoThreadsFollowTheRolesUnlessSet) {
  const std::string base = [&] {
    std::ifstream in(config_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }();
  // The threads name themselves as they start: wait for the expected count, then
  // check that it stays there a moment (no third thread behind a second).
  auto runWith = [&](const std::string& roles, const std::string& extra, std::size_t want) {
    std::string yaml = base;
    yaml.replace(yaml.find("roles: []"), 9, "roles: " + roles);
    std::ofstream(config_, std::ios::trunc) << yaml << extra;
    start();
    EXPECT_TRUE(pollUntil([&] { return httpUp() || !running(); })) << log();
    ASSERT_TRUE(running()) << log();
    std::size_t n = 0;
    EXPECT_TRUE(pollUntil([&] { return (n = ioThreadsOf(pid_)) == want; }))
        << roles << " " << extra << ": " << n << " io threads, want " << want;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(ioThreadsOf(pid_), want) << roles << " " << extra;
    ::kill(pid_, SIGTERM);
    EXPECT_EQ(waitExit(), 0) << log();
  };
  runWith("[]", "", 1);
  runWith("[rs]", "", 2);
  runWith("[rs]", "threads: 3\n", 3);
}

// --print-config shows the value each key ends up with: the file's, a --set's, or the
// schema's default; nothing is started and the data folder is not made.
TEST_F(LccdProcessTest, PrintConfigShowsEffectiveValuesWithoutStarting) {
  const std::string cmd = lccd_ + " -c " + config_ + " --set uns.max_depth=12 --print-config 2>&1";
  FILE* out = ::popen(cmd.c_str(), "r");
  ASSERT_NE(out, nullptr);
  std::string text;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, out)) text.append(buf, n);
  EXPECT_EQ(::pclose(out), 0) << text;
  EXPECT_NE(text.find("\nlog.level = debug\n"), std::string::npos) << text;      // the file
  EXPECT_NE(text.find("\nuns.max_depth = 12\n"), std::string::npos) << text;     // --set
  EXPECT_NE(text.find("\nuns.idle_timeout = "), std::string::npos) << text;       // a default
  EXPECT_FALSE(fs::exists(data_dir_));
}

}  // namespace
}  // namespace lcc
