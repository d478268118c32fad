#include "http/admin_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/config/config.h"
#include "http/url_codec.h"
#include "net/host_port.h"

namespace lcc::http {
namespace {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = boost::asio::ip::tcp;

// The admin port to connect to: a wildcard listen address means this host.
Status targetFrom(const std::string& hp, const std::string& what, AdminTarget* out) {
  auto parsed = net::HostPort::parse(hp);
  if (!parsed.isOk()) return Status::invalidArgument(what + " must be HOST:PORT: " + parsed.status().message());
  net::HostPort target = parsed->reachable();
  out->host = target.host;
  out->port = target.portString();
  return Status::ok();
}

// Why the token at `path` (<node.data_dir>/admin.token of `config_file`) cannot be read,
// saying which config was read and how the path was made from it, and what to do.
Status adminTokenProblem(const std::string& config_file, const std::string& data_dir, const std::string& path,
                         int err) {
  std::string why = "cannot read the admin token " + path + ": " + std::strerror(err) + ". lcc read the config " +
                    Config::absolutePath(config_file) + ", whose node.data_dir is " + data_dir;
  const bool relative = !data_dir.empty() && data_dir.front() != '/';
  if (relative) {
    std::error_code ec;
    why += ", a path relative to the current folder (" + std::filesystem::current_path(ec).string() + ")";
  }
  why += "; ";
  if (err == EACCES) {
    why += "run lcc as the user running lccd (or root)";
  } else if (relative) {
    why += "run lcc in the folder lccd runs in, or give --config a config with an absolute node.data_dir";
  } else {
    why += "is lccd running with this config? (it writes the token at start)";
  }
  return Status::invalidArgument(why + ", or set LCC_ADMIN_TOKEN");
}

}  // namespace

Result<AdminTarget> resolveAdminTarget(const std::string& config_file, const AdminEndpoint& endpoint) {
  const std::string& http_override = endpoint.http;
  const char* const listen_key = endpoint.tls ? "listen.https" : "listen.http";
  AdminTarget t;
  t.tls = endpoint.tls;
  const char* env_token = std::getenv("LCC_ADMIN_TOKEN");
  const bool have_env_token = env_token != nullptr && *env_token != '\0';
  std::optional<Config> cfg;
  std::ifstream probe(config_file);
  const bool config_needed = http_override.empty() || !have_env_token;
  if (probe.good() || config_needed) {
    std::vector<ConfigProblem> problems;
    auto loaded = Config::load(config_file, {}, &problems);
    if (!loaded.isOk()) {
      if (config_needed) {
        std::string why = problems.empty() ? loaded.status().message() : problems.front().toString();
        return Status::invalidArgument("cannot use " + config_file + ": " + why +
                                       " (give --config FILE, or --http HOST:PORT with LCC_ADMIN_TOKEN)");
      }
    } else {
      cfg = std::move(loaded).value();
    }
  }
  if (!http_override.empty()) {
    LCC_RETURN_IF_ERROR(targetFrom(http_override, "--http", &t));
  } else {
    if (cfg->getString(listen_key).empty()) {
      return Status::invalidArgument(config_file + ": " + listen_key + " is off (\"\"): give --http HOST:PORT");
    }
    LCC_RETURN_IF_ERROR(targetFrom(cfg->getString(listen_key), config_file + ": " + listen_key, &t));
  }
  if (have_env_token) {
    t.token = trimSpace(env_token);
  } else if (cfg) {
    const std::string path = Config::absolutePath(cfg->getString("node.data_dir")) + "/admin.token";
    std::ifstream in(path);
    if (!in) return adminTokenProblem(config_file, cfg->getString("node.data_dir"), path, errno);
    std::stringstream ss;
    ss << in.rdbuf();
    t.token = trimSpace(ss.str());
  }
  return t;
}

namespace {

// Runs what was started on `io` (each step is bounded by the stream's expiry).
void runAll(boost::asio::io_context& io) {
  io.restart();
  io.run();
}

std::string describe(const boost::system::error_code& ec) {
  return ec == beast::error::timeout ? "timed out" : ec.message();
}

// The request out and the answer in, on a connected stream (plain or TLS).
template <typename Stream>
Result<ClientResponse> exchange(boost::asio::io_context& io, Stream& stream, beast::tcp_stream& tcp,
                                const bhttp::request<bhttp::string_body>& req, const std::string& where,
                                int timeout_ms, std::uint64_t body_limit) {
  boost::system::error_code ec = boost::asio::error::would_block;
  tcp.expires_after(std::chrono::milliseconds(timeout_ms));
  bhttp::async_write(stream, req, [&](const boost::system::error_code& e, std::size_t) { ec = e; });
  runAll(io);
  if (ec) return Status::ioError("sending to lccd at " + where + ": " + describe(ec));
  beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(body_limit);
  ec = boost::asio::error::would_block;
  tcp.expires_after(std::chrono::milliseconds(timeout_ms));
  bhttp::async_read(stream, buffer, parser, [&](const boost::system::error_code& e, std::size_t) { ec = e; });
  runAll(io);
  if (ec) return Status::ioError("reading the answer of lccd at " + where + ": " + describe(ec));
  ClientResponse out;
  out.status = parser.get().result_int();
  for (const auto& f : parser.get()) out.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
  out.body = std::move(parser.get().body());
  return out;
}

// Connects `tcp` to the target, within `timeout_ms`.
Status connectTo(boost::asio::io_context& io, beast::tcp_stream& tcp, const AdminTarget& target,
                 const std::string& where, int timeout_ms) {
  tcp::resolver resolver(io);
  boost::system::error_code ec;
  auto results = resolver.resolve(target.host, target.port, ec);
  if (ec) return Status::ioError("cannot resolve " + target.host + ": " + ec.message());
  ec = boost::asio::error::would_block;
  tcp.expires_after(std::chrono::milliseconds(timeout_ms));
  tcp.async_connect(results, [&](const boost::system::error_code& e, const tcp::endpoint&) { ec = e; });
  runAll(io);
  if (ec) return Status::ioError("cannot connect to lccd at " + where + ": " + describe(ec));
  return Status::ok();
}

// The client handshake: the certificate must chain to the context's CAs and name the host.
Status handshake(boost::asio::io_context& io, boost::asio::ssl::stream<beast::tcp_stream>& s,
                 const AdminTarget& target, const std::string& where, int timeout_ms) {
  const std::string& name = target.server_name.empty() ? target.host : target.server_name;
  if (!net::setServerName(s.native_handle(), name)) {
    return Status::invalidArgument("TLS: " + name + " is not a name a certificate can carry");
  }
  boost::system::error_code ec = boost::asio::error::would_block;
  s.next_layer().expires_after(std::chrono::milliseconds(timeout_ms));
  s.async_handshake(boost::asio::ssl::stream_base::client, [&](const boost::system::error_code& e) { ec = e; });
  runAll(io);
  if (!ec) return Status::ok();
  const std::string why = ec == beast::error::timeout ? describe(ec) : net::describeTlsError(s.native_handle(), ec);
  return Status::ioError("TLS handshake with lccd at " + where + ": " + why);
}

}  // namespace

Result<ClientResponse> adminRequest(const AdminTarget& target, const std::string& method, const std::string& path,
                                    const std::string& form, int timeout_ms, std::uint64_t body_limit) {
  boost::asio::io_context io;
  const std::string where = target.host + ":" + target.port;
  try {
    bhttp::request<bhttp::string_body> req(bhttp::string_to_verb(method), path, 11);
    req.set(bhttp::field::host, where);
    req.set(bhttp::field::user_agent, "lcc");
    req.set(bhttp::field::accept, "application/json");
    if (!target.token.empty()) req.set(bhttp::field::authorization, "Bearer " + target.token);
    if (!form.empty() || method == "POST") {
      req.set(bhttp::field::content_type, "application/x-www-form-urlencoded");
      req.body() = form;
    }
    req.keep_alive(false);
    req.prepare_payload();
    if (!target.tls) {
      beast::tcp_stream stream(io);
      LCC_RETURN_IF_ERROR(connectTo(io, stream, target, where, timeout_ms));
      return exchange(io, stream, stream, req, where, timeout_ms, body_limit);
    }
    boost::asio::ssl::stream<beast::tcp_stream> stream(io, *target.tls);
    LCC_RETURN_IF_ERROR(connectTo(io, stream.next_layer(), target, where, timeout_ms));
    LCC_RETURN_IF_ERROR(handshake(io, stream, target, where, timeout_ms));
    return exchange(io, stream, stream.next_layer(), req, where, timeout_ms, body_limit);
  } catch (const std::exception& e) {
    return Status::ioError("talking to lccd at " + where + ": " + e.what());
  }
}

std::string ClientResponse::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (beast::iequals(k, beast::string_view(name.data(), name.size()))) return v;
  }
  return "";
}

std::string errorText(const ClientResponse& r) {
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (!j.is_discarded() && j.is_object() && j.contains("error") && j["error"].is_string()) {
    return j["error"].get<std::string>();
  }
  std::string b = trimSpace(r.body);
  if (b.empty()) b = "HTTP " + std::to_string(r.status);
  return b;
}

int runAdminCommand(const std::string& config_file, const AdminEndpoint& endpoint, const std::string& method,
                    const std::string& path, const std::string& form,
                    const std::function<int(const ClientResponse&)>& on_ok, std::ostream& err) {
  auto target = resolveAdminTarget(config_file, endpoint);
  if (!target.isOk()) {
    err << "lcc: " << target.status().message() << "\n";
    return 2;
  }
  auto res = adminRequest(target.value(), method, path, form);
  if (!res.isOk()) {
    err << "lcc: " << res.status().message() << "\n";
    return 2;
  }
  const ClientResponse& r = res.value();
  if (r.status >= 200 && r.status < 300) return on_ok(r);
  std::string why = errorText(r);
  if (r.status == 401) why += " (check the token: data_dir/admin.token of the daemon, or LCC_ADMIN_TOKEN)";
  err << "lcc: " << why << " (HTTP " << r.status << ")\n";
  return r.status == 400 ? 2 : 1;
}

}  // namespace lcc::http
