// admin_client.h — the `lcc` side of the admin API: finds the daemon's HTTP port and
// admin token, and makes one HTTP/1.1 request (Boost.Beast, blocking, with a timeout).
// Used by core/app/cli_provider.cc, cli_status.cc and cli_botm.cc. Plain HTTP, or HTTPS
// when the endpoint has a TLS context (`lcc --tls`, docs/security.md §3).
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lcc/status.h"
#include "net/tls.h"

namespace lcc::http {

struct AdminTarget {
  std::string host;   // "127.0.0.1"
  std::string port;   // "7780"
  std::string token;  // may be empty: the daemon then answers 401
  net::TlsContextPtr tls;  // set: HTTPS; the server's certificate must name `host`
  std::string server_name;  // ... or this name instead, when set (a front end's tls_name=)
};

// Where the `lcc` command was told to go: --http, and the TLS context of --tls.
struct AdminEndpoint {
  std::string http;         // --http HOST:PORT; empty: listen.http (listen.https with tls) of the config
  net::TlsContextPtr tls;   // null: plain HTTP
};

// --http HOST:PORT wins over listen.http of `config_file` (listen.https when
// `endpoint.tls` is set). The token comes from the
// LCC_ADMIN_TOKEN environment variable when set, else <node.data_dir>/admin.token of
// `config_file` (the file is optional when --http and LCC_ADMIN_TOKEN are given).
// A wildcard listen address (0.0.0.0, ::) is reached on loopback.
Result<AdminTarget> resolveAdminTarget(const std::string& config_file, const AdminEndpoint& endpoint);

struct ClientResponse {
  int status = 0;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // as received
  // The first header named `name` (case-insensitive), or "".
  std::string header(std::string_view name) const;
};

// One request with `Authorization: Bearer <token>`; `form` (urlencoded) is sent as
// the body of a POST. Errors: a connection, TLS or protocol failure, with a clear message
// (a refused certificate says why: "certificate verify failed (...)"). Every step,
// the TLS handshake included, is bounded by `timeout_ms`; a body longer than
// `body_limit` is an error. The CU's peers (cu/peer_source.h) are asked through it too.
Result<ClientResponse> adminRequest(const AdminTarget& target, const std::string& method, const std::string& path,
                                    const std::string& form = "", int timeout_ms = 30000,
                                    std::uint64_t body_limit = 64u << 20);

// "error" of a JSON error body, or the body itself (trimmed) when it is not JSON.
std::string errorText(const ClientResponse& r);

// One admin call for the `lcc` command: resolves the target, sends the request,
// and on a 2xx answer returns on_ok(response). Otherwise prints one line
// "lcc: <why>" to `err` and returns the exit code: 2 for a usage, configuration or
// connection problem or a 400 answer; 1 for a refusal or "not found" (401, 403,
// 404, 5xx).
int runAdminCommand(const std::string& config_file, const AdminEndpoint& endpoint, const std::string& method,
                    const std::string& path, const std::string& form,
                    const std::function<int(const ClientResponse&)>& on_ok, std::ostream& err);

}  // namespace lcc::http
