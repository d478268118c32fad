#include "http/admin_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstdlib>
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

}  // namespace

Result<AdminTarget> resolveAdminTarget(const std::string& config_file, const std::string& http_override) {
  AdminTarget t;
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
    if (cfg->getString("listen.http").empty()) {
      return Status::invalidArgument(config_file + ": listen.http is off (\"\"): give --http HOST:PORT");
    }
    LCC_RETURN_IF_ERROR(targetFrom(cfg->getString("listen.http"), config_file + ": listen.http", &t));
  }
  if (have_env_token) {
    t.token = trimSpace(env_token);
  } else if (cfg) {
    const std::string path = Config::absolutePath(cfg->getString("node.data_dir")) + "/admin.token";
    std::ifstream in(path);
    if (!in) {
      return Status::invalidArgument("cannot read the admin token " + path +
                                     " (run lcc as the user running lccd, or set LCC_ADMIN_TOKEN)");
    }
    std::stringstream ss;
    ss << in.rdbuf();
    t.token = trimSpace(ss.str());
  }
  return t;
}

Result<ClientResponse> adminRequest(const AdminTarget& target, const std::string& method, const std::string& path,
                                    const std::string& form, int timeout_ms) {
  boost::asio::io_context io;
  beast::tcp_stream stream(io);
  const std::string where = target.host + ":" + target.port;
  try {
    tcp::resolver resolver(io);
    boost::system::error_code ec;
    auto results = resolver.resolve(target.host, target.port, ec);
    if (ec) return Status::ioError("cannot resolve " + target.host + ": " + ec.message());
    stream.expires_after(std::chrono::milliseconds(timeout_ms));
    stream.connect(results, ec);
    if (ec) return Status::ioError("cannot connect to lccd at " + where + ": " + ec.message());
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
    stream.expires_after(std::chrono::milliseconds(timeout_ms));
    bhttp::write(stream, req, ec);
    if (ec) return Status::ioError("sending to lccd at " + where + ": " + ec.message());
    beast::flat_buffer buffer;
    bhttp::response_parser<bhttp::string_body> parser;
    parser.body_limit(64u << 20);
    bhttp::read(stream, buffer, parser, ec);
    if (ec) return Status::ioError("reading the answer of lccd at " + where + ": " + ec.message());
    ClientResponse out;
    out.status = parser.get().result_int();
    out.body = std::move(parser.get().body());
    return out;
  } catch (const std::exception& e) {
    return Status::ioError("talking to lccd at " + where + ": " + e.what());
  }
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

int runAdminCommand(const std::string& config_file, const std::string& http_override, const std::string& method,
                    const std::string& path, const std::string& form,
                    const std::function<int(const ClientResponse&)>& on_ok, std::ostream& err) {
  auto target = resolveAdminTarget(config_file, http_override);
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
