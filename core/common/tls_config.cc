#include "common/tls_config.h"

#include "net/host_port.h"

namespace lcc {

namespace {

// The listeners for people's clients: plain ones and TLS ones; never tls:// spelled.
const char* const kClientListeners[] = {"listen.uns", "listen.cu", "listen.http",
                                        "listen.uns_tls", "listen.cu_tls", "listen.https"};
const char* const kServerTlsListeners[] = {"listen.uns_tls", "listen.cu_tls", "listen.https"};
// Links between machines that may be written tls://host:port.
const char* const kLinkListeners[] = {"listen.qm", "listen.botm", "listen.robots"};
const char* const kLinkTargets[] = {"uns.qm", "botm.source", "bot.connect"};

// A factory message "cert_file: /path: why" as a problem of key "tls.cert_file", with
// the option names of the context mapped to the keys they came from.
ConfigProblem problemOf(const std::string& file, const Status& s, const std::string& ca_key) {
  const std::string& m = s.message();
  const auto sep = m.find(": ");
  std::string field = sep == std::string::npos ? "" : m.substr(0, sep);
  const std::string why = sep == std::string::npos ? m : m.substr(sep + 2);
  if (field == "client_ca_file" || field == "ca_file") return {file, ca_key, why};
  if (field.empty()) return {file, "tls", m};
  return {file, "tls." + field, why};
}

}  // namespace

std::shared_ptr<NodeTls> NodeTls::fromConfig(const Config& cfg, std::vector<ConfigProblem>* problems) {
  const std::size_t before = problems->size();
  auto tls = std::shared_ptr<NodeTls>(new NodeTls());
  Settings& s = tls->settings_;
  s.file = cfg.file();
  for (const char* key : kClientListeners) {
    if (net::splitLinkAddress(cfg.getString(key)).tls) {
      problems->push_back({s.file, key, "tls:// is for links between machines; a TLS port for clients is "
                                        "listen.uns_tls, listen.cu_tls or listen.https"});
    }
  }
  std::string server_user, link_user;
  for (const char* key : kServerTlsListeners) {
    if (!cfg.getString(key).empty() && server_user.empty()) server_user = key;
  }
  for (const char* key : kLinkListeners) {
    if (net::splitLinkAddress(cfg.getString(key)).tls) {
      s.want_peer_server = true;
      if (link_user.empty()) link_user = key;
    }
  }
  for (const char* key : kLinkTargets) {
    if (net::splitLinkAddress(cfg.getString(key)).tls) {
      s.want_peer_client = true;
      if (link_user.empty()) link_user = key;
    }
  }
  s.want_server = !server_user.empty();
  const auto version = net::parseTlsVersion(cfg.getString("tls.min_version"));
  if (!version) {
    problems->push_back({s.file, "tls.min_version", "must be 1.2 or 1.3 (got " + cfg.getString("tls.min_version") + ")"});
  }
  const std::string cert = cfg.getString("tls.cert_file"), key = cfg.getString("tls.key_file");
  const std::string peer_ca = cfg.getString("tls.peer_ca_file");
  const std::string user = !server_user.empty() ? server_user : link_user;
  if (!user.empty() && cert.empty()) problems->push_back({s.file, "tls.cert_file", "must be set when " + user + " is"});
  if (!user.empty() && key.empty()) problems->push_back({s.file, "tls.key_file", "must be set when " + user + " is"});
  if (!link_user.empty() && peer_ca.empty()) {
    problems->push_back({s.file, "tls.peer_ca_file", "must be set when " + link_user + " is tls://"});
  }
  const net::TlsVersion v = version.value_or(net::TlsVersion::k12);
  s.server = {cert, key, cfg.getString("tls.client_ca_file"), v};
  s.peer_server = {cert, key, peer_ca, v};
  s.peer_client = {peer_ca, cert, key, v};
  s.want_content_client = true;
  s.content_client = {peer_ca, cert, key, v};
  tls->handshake_timeout_ = Millis(cfg.getInt("tls.handshake_timeout"));
  if (problems->size() != before) return nullptr;
  Made made;
  if (!make(s, &made, problems)) return nullptr;
  if (made.server) tls->server_ = std::make_shared<net::TlsContextSlot>(made.server);
  if (made.peer_server) tls->peer_server_ = std::make_shared<net::TlsContextSlot>(made.peer_server);
  if (made.peer_client) tls->peer_client_ = std::make_shared<net::TlsContextSlot>(made.peer_client);
  if (made.content_client) tls->content_client_ = std::make_shared<net::TlsContextSlot>(made.content_client);
  return tls;
}

bool NodeTls::make(const Settings& s, Made* out, std::vector<ConfigProblem>* problems) {
  const std::size_t before = problems->size();
  if (s.want_server) {
    auto c = net::makeServerContext(s.server);
    if (c.isOk()) out->server = c.value();
    else problems->push_back(problemOf(s.file, c.status(), "tls.client_ca_file"));
  }
  if (s.want_peer_server && problems->size() == before) {
    auto c = net::makeServerContext(s.peer_server);
    if (c.isOk()) out->peer_server = c.value();
    else problems->push_back(problemOf(s.file, c.status(), "tls.peer_ca_file"));
  }
  if (s.want_peer_client && problems->size() == before) {
    auto c = net::makeClientContext(s.peer_client);
    if (c.isOk()) out->peer_client = c.value();
    else problems->push_back(problemOf(s.file, c.status(), "tls.peer_ca_file"));
  }
  if (s.want_content_client && problems->size() == before) {
    auto c = net::makeClientContext(s.content_client);
    if (c.isOk()) out->content_client = c.value();
    else problems->push_back(problemOf(s.file, c.status(), "tls.peer_ca_file"));
  }
  return problems->size() == before;
}

Result<std::shared_ptr<NodeTls>> NodeTls::linkClientOnly(const Config& cfg) {
  auto tls = std::shared_ptr<NodeTls>(new NodeTls());
  Settings& s = tls->settings_;
  s.file = cfg.file();
  s.want_peer_client = true;
  const auto version = net::parseTlsVersion(cfg.getString("tls.min_version"));
  if (!version) return Status::invalidArgument(s.file + ": tls.min_version: must be 1.2 or 1.3");
  if (cfg.getString("tls.peer_ca_file").empty()) {
    return Status::invalidArgument(s.file + ": tls.peer_ca_file: must be set for a tls:// link");
  }
  s.peer_client = {cfg.getString("tls.peer_ca_file"), cfg.getString("tls.cert_file"), cfg.getString("tls.key_file"),
                   *version};
  std::vector<ConfigProblem> problems;
  Made made;
  if (!make(s, &made, &problems)) return Status::invalidArgument(problems.front().toString());
  tls->peer_client_ = std::make_shared<net::TlsContextSlot>(made.peer_client);
  tls->handshake_timeout_ = Millis(cfg.getInt("tls.handshake_timeout"));
  return tls;
}

net::TlsLink linkListening(const std::shared_ptr<NodeTls>& tls, Clock* clock) {
  if (!tls) return {};
  return {tls->peerServer(), clock, tls->handshakeTimeout()};
}

net::TlsLink linkConnecting(const std::shared_ptr<NodeTls>& tls, Clock* clock) {
  if (!tls) return {};
  return {tls->peerClient(), clock, tls->handshakeTimeout()};
}

Status NodeTls::reload() {
  std::vector<ConfigProblem> problems;
  Made made;
  if (!make(settings_, &made, &problems)) {
    std::string why;
    for (const auto& p : problems) why += (why.empty() ? "" : "; ") + p.toString();
    return Status::invalidArgument(why);
  }
  if (server_) server_->replace(made.server);
  if (peer_server_) peer_server_->replace(made.peer_server);
  if (peer_client_) peer_client_->replace(made.peer_client);
  if (content_client_) content_client_->replace(made.content_client);
  return Status::ok();
}

}  // namespace lcc
