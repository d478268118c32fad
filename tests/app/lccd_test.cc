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
#include <grp.h>
#include <pwd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <vector>
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

// ---------------------------------------------------------------- errors that say what to do (issue 30 §3)

struct RunResult {
  int code = -1;  // the exit code; -1: killed or over the deadline; 126: could not change user
  std::string output;
};

// Runs `program` with `args` to its end (20 s at most, then killed), in folder `cwd`
// (empty: this one), as user `uid` (-1: as we are), stdout and stderr together.
RunResult runToEnd(const std::string& program, const std::vector<std::string>& args, const std::string& out_file,
             const std::string& cwd = "", int uid = -1) {
  RunResult r;
  const pid_t pid = ::fork();
  if (pid == 0) {
    int fd = ::open(out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    int in = ::open("/dev/null", O_RDONLY);
    ::dup2(in, 0);
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) ::_exit(125);
    if (uid >= 0 && (::setgroups(0, nullptr) != 0 || ::setgid(uid) != 0 || ::setuid(uid) != 0)) {
      std::fprintf(stderr, "setuid failed: %s\n", std::strerror(errno));
      ::_exit(126);
    }
    std::vector<char*> argv{const_cast<char*>(program.c_str())};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(program.c_str(), argv.data());
    ::_exit(127);
  }
  int status = 0;
  const bool ended = pollUntil([&] { return ::waitpid(pid, &status, WNOHANG) == pid; });
  if (!ended) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  }
  r.code = ended && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.output = slurp(out_file);
  return r;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class LccdErrorsTest : public LccdProcessTest {
 protected:
  RunResult lccd(std::vector<std::string> args, int uid = -1) {
    args.insert(args.begin(), {"-c", config_});
    return runToEnd(lccd_, args, dir_.file("run.log"), "", uid);
  }
  // The uid of "nobody", to run lccd as a user that may not write a root-owned folder.
  static int nobody() {
    const passwd* pw = ::getpwnam("nobody");
    return pw != nullptr ? static_cast<int>(pw->pw_uid) : 65534;
  }
  // Lets another user read the config and plugins (the test folder is private).
  void openToOthers() {
    for (const auto& p : {dir_.path(), dir_.path() + "/plugins"}) fs::permissions(p, fs::perms(0755), fs::perm_options::replace);
    fs::permissions(config_, fs::perms(0644), fs::perm_options::replace);
  }
};

// A second lccd on the same data folder: exit 3, naming the lccd that holds it, when it
// started and its config, and what to do; the first one is not disturbed.
TEST_F(LccdErrorsTest, ASecondLccdOnTheSameDataFolderIsToldWhichProcessHoldsIt) {
  start();
  ASSERT_TRUE(pollUntil([&] { return httpUp() || !running(); })) << log();
  ASSERT_TRUE(running()) << log();
  const RunResult second = lccd({"--set", "listen.http=127.0.0.1:" + std::to_string(freePort())});
  EXPECT_EQ(second.code, 3) << second.output;
  EXPECT_TRUE(has(second.output, "data folder " + data_dir_ + " (node.data_dir) is in use by lccd pid " +
                                     std::to_string(pid_) + " (started 20"))
      << second.output;
  EXPECT_TRUE(has(second.output, "config " + config_ + ")")) << second.output;
  EXPECT_TRUE(has(second.output, "or give this lccd another node.data_dir")) << second.output;
  EXPECT_TRUE(running()) << log();
  EXPECT_TRUE(httpUp());
  ::kill(pid_, SIGTERM);
  EXPECT_EQ(waitExit(), 0) << log();
  // Once it stopped, the folder is free again.
  start();
  ASSERT_TRUE(pollUntil([&] { return httpUp() || !running(); })) << log();
  EXPECT_TRUE(running()) << log();
}

// A data folder lccd's user may not write: the folder, the user, and what to do.
TEST_F(LccdErrorsTest, AReadOnlyDataFolderSaysWhoMustWriteIt) {
  fs::create_directories(data_dir_);
  const bool root = ::geteuid() == 0;
  fs::permissions(data_dir_, fs::perms(root ? 0755 : 0555), fs::perm_options::replace);
  openToOthers();
  const RunResult r = lccd({}, root ? nobody() : -1);
  fs::permissions(data_dir_, fs::perms(0700), fs::perm_options::replace);
  if (r.code == 126) GTEST_SKIP() << "cannot run lccd as nobody here: " << r.output;
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(has(r.output, "the data folder " + data_dir_ + " (node.data_dir) cannot be written by user ")) << r.output;
  EXPECT_TRUE(has(r.output, "Permission denied")) << r.output;
  EXPECT_TRUE(has(r.output, "chown -R ")) << r.output;
  EXPECT_TRUE(has(r.output, "or choose another node.data_dir")) << r.output;

  // --check finds it too, as that user.
  const RunResult check = lccd({"--check"}, root ? nobody() : -1);
  EXPECT_EQ(check.code, 2) << check.output;
  EXPECT_TRUE(has(check.output, config_ + ": node.data_dir: the data folder " + data_dir_ + " (node.data_dir) cannot be written"))
      << check.output;
}

// --check binds each listen address: a port another program holds is a problem.
TEST_F(LccdErrorsTest, CheckFindsAPortInUse) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  const std::string busy = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  const RunResult r = lccd({"--check", "--set", "listen.http=" + busy});
  ::close(fd);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "--set: listen.http: " + busy + ": cannot listen: Address already in use")) << r.output;
  EXPECT_TRUE(has(r.output, "choose another address for listen.http")) << r.output;
  // Free again: it passes.
  const RunResult ok = lccd({"--check", "--set", "listen.http=" + busy});
  EXPECT_EQ(ok.code, 0) << ok.output;
}

// --check while this config's lccd runs (before a restart): its ports and data folder
// are in use by that very lccd, which is a note, not a problem.
TEST_F(LccdErrorsTest, CheckBeforeARestartNotesTheRunningLccd) {
  start();
  ASSERT_TRUE(pollUntil([&] { return httpUp() || !running(); })) << log();
  const RunResult r = lccd({"--check"});
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "note: data folder " + data_dir_ + " (node.data_dir) is in use by lccd pid " +
                                std::to_string(pid_)))
      << r.output;
  EXPECT_TRUE(has(r.output, "note: listen.http 127.0.0.1:" + std::to_string(port_) + ": in use by the running lccd pid " +
                                std::to_string(pid_)))
      << r.output;
}

// --check reads the object store's secret as the robots would (issue 31 §1): a secret
// file others can read is a problem naming the key, and its content is never printed.
TEST_F(LccdErrorsTest, CheckRefusesAnObjectStoreSecretOthersCanRead) {
  const std::string secret = dir_.file("s3.secret");
  std::ofstream(secret) << "very-secret-key\n";
  fs::permissions(secret, fs::perms(0644), fs::perm_options::replace);
  const std::vector<std::string> args = {"--check", "--set", "roles=[bot]", "--set",
                                         "listen.robots=127.0.0.1:" + std::to_string(freePort()), "--set",
                                         "s3.endpoint=http://127.0.0.1:9", "--set", "s3.access_key=ak", "--set",
                                         "s3.secret_key_file=" + secret};
  const RunResult r = lccd(args);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "--set: s3.secret_key_file: " + secret + " is readable by group or others (chmod 600)"))
      << r.output;
  EXPECT_FALSE(has(r.output, "very-secret-key")) << r.output;
  fs::permissions(secret, fs::perms(0600), fs::perm_options::replace);
  const RunResult ok = lccd(args);
  EXPECT_EQ(ok.code, 0) << ok.output;
  EXPECT_FALSE(has(ok.output, "very-secret-key")) << ok.output;
}

// A bad --set is blamed on --set (not on the file), an enum names its words, and an
// unknown key gets the nearest one.
TEST_F(LccdErrorsTest, SetProblemsNameSetTheAllowedWordsAndTheNearestKey) {
  const RunResult r = lccd({"--check", "--set", "log.level=warning", "--set", "node.dat_dir=/srv/lcc"});
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "--set: log.level: must be debug, info, warn or error (got warning)")) << r.output;
  EXPECT_TRUE(has(r.output, "--set: node.dat_dir: unknown key; did you mean node.data_dir?")) << r.output;
  EXPECT_FALSE(has(r.output, config_ + ": ")) << "nothing is blamed on the file:\n" << r.output;
}

// `lcc status` in another folder, with a config whose node.data_dir is relative: it says
// which config it read, the path it made, and why that path is where it looked.
TEST_F(LccdErrorsTest, LccStatusElsewhereSaysWhichConfigAndPath) {
  const std::string lcc = std::string(LCC_BIN_DIR) + "/lcc";
  if (!fs::exists(lcc)) GTEST_SKIP() << lcc << " is not built";
  const std::string relative_config = dir_.file("relative.yaml");
  std::ofstream(relative_config) << "node:\n  data_dir: ./data\nlisten:\n  http: 127.0.0.1:" << port_ << "\n";
  const std::string elsewhere = dir_.path() + "/elsewhere";
  fs::create_directories(elsewhere);
  const RunResult r = runToEnd(lcc, {"--config", relative_config, "status"}, dir_.file("lcc.log"), elsewhere);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "cannot read the admin token " + elsewhere + "/data/admin.token: No such file")) << r.output;
  EXPECT_TRUE(has(r.output, "lcc read the config " + relative_config + ", whose node.data_dir is ./data, a path "
                            "relative to the current folder (" + elsewhere + ")"))
      << r.output;
  EXPECT_TRUE(has(r.output, "run lcc in the folder lccd runs in")) << r.output;
}

// `lcc cp send` refused at init with 110: the line, then what the provider can do.
TEST_F(LccdErrorsTest, CpSendRefusedAtInitSaysWhatToDo) {
  const std::string lcc = std::string(LCC_BIN_DIR) + "/lcc";
  if (!fs::exists(lcc)) GTEST_SKIP() << lcc << " is not built";
  std::string yaml = slurp(config_);
  yaml.replace(yaml.find("roles: []"), 9, "roles: [uns]");
  const std::string uns = "127.0.0.1:" + std::to_string(freePort());
  yaml.replace(yaml.find("listen:\n"), 8, "listen:\n  uns: " + uns + "\n  qm: 127.0.0.1:" + std::to_string(freePort()) + "\n");
  std::ofstream(config_, std::ios::trunc) << yaml;
  start();
  ASSERT_TRUE(pollUntil([&] { return httpUp() || !running(); })) << log();
  ASSERT_TRUE(running()) << log();
  const RunResult r = runToEnd(lcc, {"cp", "send", "--uns", uns, "--id", "7", "--password", "wrong"}, dir_.file("lcc.log"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(has(r.output, "init rejected 110: ")) << r.output;
  EXPECT_TRUE(has(r.output, "lcc cp send: the UNS knows no provider with this --id and --password")) << r.output;
  EXPECT_TRUE(has(r.output, "http://127.0.0.1:WEB-PORT/register")) << r.output;
}

}  // namespace
}  // namespace lcc
