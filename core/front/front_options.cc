#include "front/front_options.h"

#include <sstream>

#include "net/host_port.h"

namespace lcc::front {
namespace {

bool validName(const std::string& n) {
  if (n.empty() || n.size() > 64) return false;
  for (char c : n) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return false;
  }
  return true;
}

// ca=: this sub-LCC's own client context (its CAs; the node's certificate shown when
// tls.cert_file is set, for a sub-LCC whose tls.client_ca_file asks for one).
Status makeLccTls(const Config& cfg, LccSpec& l) {
  if (l.ca_file.empty()) return Status::ok();
  net::TlsClientOptions c;
  c.ca_file = l.ca_file;
  c.cert_file = cfg.getString("tls.cert_file");
  c.key_file = cfg.getString("tls.key_file");
  c.min_version = net::parseTlsVersion(cfg.getString("tls.min_version")).value_or(net::TlsVersion::k12);
  auto ctx = net::makeClientContext(c);
  if (!ctx.isOk()) return Status::invalidArgument("ca=" + l.ca_file + ": " + ctx.status().message());
  l.tls = std::make_shared<net::TlsContextSlot>(ctx.value());
  return Status::ok();
}

}  // namespace

Result<LccSpec> parseLccSpec(const std::string& entry) {
  std::istringstream in(entry);
  LccSpec s;
  in >> s.name;
  if (!validName(s.name)) return Status::invalidArgument("\"" + entry + "\": a name of [a-z0-9_-] (1-64) comes first");
  std::string kv;
  while (in >> kv) {
    const auto eq = kv.find('=');
    const std::string key = eq == std::string::npos ? kv : kv.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : kv.substr(eq + 1);
    std::string* slot = key == "uns" ? &s.uns : key == "admin" ? &s.admin : key == "cu" ? &s.cu
                      : key == "token_file" ? &s.token_file : key == "ca" ? &s.ca_file
                      : key == "tls_name" ? &s.tls_name : nullptr;
    if (key == "proxy" && value == "v2") {
      s.proxy_v2 = true;
      continue;
    }
    if (slot == nullptr || value.empty()) {
      return Status::invalidArgument("\"" + entry + "\": " + kv +
                                     ": expected uns=, admin=, token_file=, cu=, ca=, tls_name= or proxy=v2");
    }
    *slot = value;
  }
  const net::LinkAddress uns = net::splitLinkAddress(s.uns);
  s.uns_tls = uns.tls;
  s.uns = uns.host_port;
  if (s.admin.rfind("https://", 0) == 0) {
    s.admin_tls = true;
    s.admin = s.admin.substr(8);
  }
  if (!s.wantsTls() && (!s.ca_file.empty() || !s.tls_name.empty())) {
    return Status::invalidArgument("\"" + entry + "\": ca= and tls_name= need uns=tls:// or admin=https://");
  }
  for (const std::string* hp : {&s.uns, &s.admin, &s.cu}) {
    if (hp->empty()) continue;
    if (auto t = net::HostPort::parseTarget(*hp); !t.isOk()) {
      return Status::invalidArgument("\"" + entry + "\": " + t.status().message());
    }
  }
  if (s.uns.empty() || s.admin.empty() || s.token_file.empty()) {
    return Status::invalidArgument("\"" + entry + "\": uns=HOST:PORT, admin=HOST:PORT and token_file=PATH are required");
  }
  return s;
}

Result<FrontOptions> FrontOptions::fromConfig(const Config& cfg) {
  FrontOptions o;
  auto ms = [&cfg](const char* key) { return Millis(cfg.getInt(key)); };
  o.conninfo = cfg.getString("front.conninfo");
  o.schema = cfg.getString("front.schema");
  o.refresh_interval = ms("front.refresh_interval");
  o.stale_after = ms("front.stale_after");
  o.request_timeout = ms("front.request_timeout");
  o.pending_grace = ms("front.pending_grace");
  o.cache_entries = static_cast<std::size_t>(cfg.getInt("front.cache_entries"));
  o.cache_ttl = ms("front.cache_ttl");
  o.init_max_bytes = static_cast<std::size_t>(cfg.getInt("front.init_max_bytes"));
  o.init_timeout = ms("front.init_timeout");
  o.connect_timeout = ms("front.connect_timeout");
  o.relay_buffer = static_cast<std::size_t>(cfg.getInt("front.relay_buffer"));
  o.idle_timeout = ms("front.idle_timeout");
  o.slots = static_cast<std::uint32_t>(cfg.getInt("front.slots"));
  o.move_wait = ms("front.move_wait");
  o.move_page = static_cast<std::size_t>(cfg.getInt("front.move_page"));
  o.listen = cfg.getString("listen.uns");
  o.listen_tls = cfg.getString("listen.uns_tls");
  o.handshake_timeout = ms("tls.handshake_timeout");
  o.max_connections = static_cast<std::size_t>(cfg.getInt("uns.max_connections"));
  o.max_connections_per_ip = static_cast<std::size_t>(cfg.getInt("uns.max_connections_per_ip"));
  o.auth_failures_per_minute = static_cast<std::uint64_t>(cfg.getInt("uns.auth_failures_per_minute"));
  o.auth_cooldown = ms("uns.auth_cooldown");
  std::string problems;
  if (o.conninfo.empty()) problems += "front.conninfo: required by the front role (a libpq connection string)\n";
  for (const auto& entry : cfg.getList("front.lccs")) {
    auto s = parseLccSpec(entry);
    if (!s.isOk()) {
      problems += "front.lccs: " + s.status().message() + "\n";
      continue;
    }
    for (const auto& other : o.lccs) {
      if (other.name == s.value().name) problems += "front.lccs: the name " + other.name + " is given twice\n";
    }
    o.lccs.push_back(std::move(s).value());
  }
  for (auto& l : o.lccs) {
    if (Status s = makeLccTls(cfg, l); !s.isOk()) problems += "front.lccs: " + l.name + ": " + s.message() + "\n";
  }
  if (o.lccs.empty()) problems += "front.lccs: the front role needs at least one sub-LCC\n";
  if (!problems.empty()) return Status::invalidArgument(problems.substr(0, problems.size() - 1));
  return o;
}

}  // namespace lcc::front
