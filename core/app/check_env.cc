#include "app/check_env.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "app/data_dir_lock.h"
#include "net/acceptor.h"
#include "net/host_port.h"
#include "s3/s3_options.h"

namespace lcc {
namespace {

// Empty when `listen` ("host:port" or "tls://host:port") can be bound now, else why not.
// Bound as the servers bind (SO_REUSEADDR), so a port with only TIME_WAIT connections passes.
std::string bindProblem(const std::string& listen, std::uint16_t* port) {
  auto hp = net::HostPort::parse(net::splitLinkAddress(listen).host_port);
  if (!hp.isOk()) return hp.status().message();
  *port = hp->port;
  boost::asio::io_context io;
  auto ep = net::resolveListen(io, hp.value());
  if (!ep.isOk()) return ep.status().message();
  boost::asio::ip::tcp::acceptor acceptor(io);
  boost::system::error_code ec;
  acceptor.open(ep->protocol(), ec);
  if (!ec) acceptor.set_option(boost::asio::ip::tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor.bind(ep.value(), ec);
  if (!ec) return {};
  std::string why = "cannot listen: " + ec.message();
  if (ec == boost::asio::error::address_in_use) why += " (another program listens there)";
  if (ec == boost::asio::error::access_denied) why += " (a port below 1024 needs root or CAP_NET_BIND_SERVICE)";
  if (ec == boost::system::errc::address_not_available) why += " (no interface of this machine has that address)";
  return why;
}

// The socket inodes of the listening TCP sockets on `port` (/proc/net/tcp and tcp6).
std::set<std::string> listeningInodes(std::uint16_t port) {
  std::set<std::string> out;
  char want[8];
  std::snprintf(want, sizeof want, ":%04X", port);
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the header
    for (int i = 0; i < 100000 && std::getline(in, line); ++i) {
      std::istringstream f(line);
      std::string slot, local, remote, state, queues, timer, retr, uid, timeout, inode;
      f >> slot >> local >> remote >> state >> queues >> timer >> retr >> uid >> timeout >> inode;
      if (state == "0A" && local.size() > 5 && local.compare(local.size() - 5, 5, want) == 0) out.insert(inode);
    }
  }
  return out;
}

// Whether process `pid` holds a socket listening on `port`; nullopt when its descriptors
// cannot be read (another user's process, seen without root).
std::optional<bool> listensOn(long pid, std::uint16_t port) {
  const std::set<std::string> inodes = listeningInodes(port);
  std::error_code ec;
  std::filesystem::directory_iterator it("/proc/" + std::to_string(pid) + "/fd", ec);
  if (ec) return std::nullopt;
  for (int i = 0; it != std::filesystem::directory_iterator() && i < 1000000; it.increment(ec), ++i) {
    if (ec) return std::nullopt;
    const std::string target = std::filesystem::read_symlink(it->path(), ec).string();
    if (!ec && target.rfind("socket:[", 0) == 0 && inodes.count(target.substr(8, target.size() - 9))) return true;
  }
  return false;
}

}  // namespace

const std::vector<std::pair<std::string, std::string>>& listenKeys() {
  static const std::vector<std::pair<std::string, std::string>> kKeys = {
      {"uns", "listen.uns"},     {"uns", "listen.uns_tls"}, {"qm", "listen.qm"},  {"botm", "listen.botm"},
      {"botm", "listen.robots"}, {"cu", "listen.cu"},       {"cu", "listen.cu_tls"}, {"", "listen.http"},
      {"", "listen.https"},      {"front", "listen.uns"},   {"front", "listen.uns_tls"}};
  return kKeys;
}

void checkObjectStore(const Config& cfg, const std::set<std::string>& roles, std::vector<ConfigProblem>* problems) {
  if (!roles.count("bot") && !roles.count("botm") && !roles.count("cu")) return;
  auto s3 = s3::S3Options::fromConfig(cfg, Config::absolutePath(cfg.getString("node.data_dir")));
  if (s3.isOk()) return;
  // The message starts with the key it is about ("s3.secret_key_file: ...").
  const std::string& why = s3.status().message();
  const auto colon = why.find(": ");
  std::string key = colon == std::string::npos ? "s3.endpoint" : why.substr(0, colon);
  if (key.find(' ') != std::string::npos) key = "s3.endpoint";
  const std::string text = key == why.substr(0, colon) ? why.substr(colon + 2) : why;
  problems->push_back({cfg.sourceOf(key), key, text});
}

void checkEnvironment(const Config& cfg, const std::set<std::string>& roles, std::vector<ConfigProblem>* problems,
                      std::vector<std::string>* notes) {
  const std::string data_dir = Config::absolutePath(cfg.getString("node.data_dir"));
  if (Status s = checkDataDirWritable(data_dir); !s.isOk()) {
    problems->push_back({cfg.sourceOf("node.data_dir"), "node.data_dir", s.message()});
  }
  const std::optional<DataDirHolder> holder = dataDirHolder(data_dir);
  if (holder) {
    notes->push_back("note: " + holderText(data_dir, *holder) +
                     ": fine for a check before restarting it; a second lccd beside it would exit 3");
  }
  for (const auto& [role, key] : listenKeys()) {
    if (!role.empty() && !roles.count(role)) continue;
    const std::string listen = cfg.getString(key);
    if (listen.empty()) continue;  // off
    std::uint16_t port = 0;
    const std::string why = bindProblem(listen, &port);
    if (why.empty()) continue;
    // Held by the lccd on this data folder, that a restart replaces: not a problem.
    if (holder && holder->pid > 0) {
      const std::optional<bool> ours = listensOn(holder->pid, port);
      if (ours.value_or(true)) {
        notes->push_back("note: " + key + " " + listen + ": in use " +
                         (ours ? "by" : "(probably; run --check as root to be sure) by") + " the running lccd pid " +
                         std::to_string(holder->pid) + ", which holds this data folder");
        continue;
      }
    }
    problems->push_back({cfg.sourceOf(key), key, listen + ": " + why + "; stop what uses it or choose another address for " + key});
  }
}

}  // namespace lcc
