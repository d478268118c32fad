// lccd_process.h — a real lccd for a benchmark: its own folder, free loopback ports,
// a config written from the arguments, started and stopped as a child process.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace lcc::bench {

// How the roles of the one lccd link (--links of the benches): over loopback TCP as the
// XML streams (node.in_process_links and node.link_frames off), over TCP as compact
// frames after the XML hellos (node.link_frames on: two hosts' form), or in process.
enum class Links { kXml, kFrames, kInProcess };
// "xml", "tcp" (frames), "process", "both" (tcp, process), "all" (xml, tcp, process);
// empty for anything else.
std::vector<Links> parseLinks(const std::string& v);
const char* linksName(Links l);  // "over TCP as XML", "over TCP as frames", "in process"

class LccdProcess {
 public:
  // `roles` as in lcc.yaml; `extra` is YAML appended to the config; `more_listeners`
  // are listen.* keys beyond the six (e.g. "uns_tls"), each on a free loopback port.
  LccdProcess(std::string work_dir, std::vector<std::string> roles, std::string extra = "",
              const std::vector<std::string>& more_listeners = {}, Links links = Links::kInProcess);
  ~LccdProcess();

  // Starts lccd (build/bin/lccd, or `binary` when not empty: another build to
  // compare with) and waits (at most 30 s) until its HTTP port answers a connect.
  bool start(const std::string& binary = "");
  // SIGTERM, then waits; true when it exited 0.
  bool stop();
  std::uint16_t port(const std::string& listener) const { return ports_.at(listener); }
  const std::string& config() const { return config_; }
  pid_t pid() const { return pid_; }
  // VmHWM and VmRSS of the running lccd, in bytes.
  std::uint64_t peakRss() const;
  std::uint64_t rss() const;
  // CPU seconds (user + system, all threads) the running lccd used so far.
  double cpuSeconds() const;
  // Runs `lcc --config <ours> args...` and returns its stdout ("" on failure).
  std::string lcc(const std::vector<std::string>& args) const;

 private:
  std::string work_;
  std::string config_;
  std::map<std::string, std::uint16_t> ports_;
  pid_t pid_ = -1;
};

std::uint16_t freeLoopbackPort();
// Connects to 127.0.0.1:port; -1 on failure.
int connectLoopback(std::uint16_t port);

}  // namespace lcc::bench
