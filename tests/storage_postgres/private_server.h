// private_server.h — a PostgreSQL server of one test's own (pg_server.sh), so that
// stopping or restarting it disturbs no other test (the fixture's server is shared).
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace lcc::testing {

class PrivateServer {
 public:
  PrivateServer() : dir_("/tmp/lcc-pgtest-" + std::to_string(getpid())) {
    conninfo_ = run("start");
    while (!conninfo_.empty() && conninfo_.back() == '\n') conninfo_.pop_back();
  }
  // A streaming standby of `primary` (pg_basebackup), in a folder of its own.
  explicit PrivateServer(const PrivateServer& primary, const char* tag)
      : dir_("/tmp/lcc-pgtest-" + std::to_string(getpid()) + tag) {
    conninfo_ = run(("standby " + dir_ + " " + primary.dir_).c_str(), true);
    while (!conninfo_.empty() && conninfo_.back() == '\n') conninfo_.pop_back();
  }
  ~PrivateServer() { run("stop"); }
  PrivateServer(const PrivateServer&) = delete;
  PrivateServer& operator=(const PrivateServer&) = delete;

  // "host=DIR port=5432 user=postgres dbname=postgres"; empty when start failed.
  const std::string& conninfo() const { return conninfo_; }
  const std::string& dir() const { return dir_; }
  // pg_ctl restart -m fast: every connection is cut; also starts a halted server.
  bool restart() { return command("restart"); }
  // pg_ctl stop -m fast, data kept: the server is down until restart().
  bool halt() { return command("halt"); }
  // pg_ctl promote: a standby becomes a primary.
  bool promote() { return command("promote"); }

 private:
  bool command(const char* what) {
    return std::system((std::string(LCC_PG_SERVER_SH) + " " + what + " " + dir_).c_str()) == 0;
  }
  std::string run(const char* what, bool args_given = false) {
    std::string out;
    const std::string cmd = std::string(LCC_PG_SERVER_SH) + " " + what + (args_given ? "" : " " + dir_);
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr) return out;
    char buf[512];
    while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
    pclose(p);
    return out;
  }
  std::string dir_;
  std::string conninfo_;
};

}  // namespace lcc::testing
