// admin_client.h — the `lcc` side of the admin API: finds the daemon's HTTP port and
// admin token, and makes one HTTP/1.1 request (Boost.Beast, blocking, with a timeout).
// Used by core/app/cli_provider.cc and cli_status.cc.
#pragma once

#include <functional>
#include <ostream>
#include <string>

#include "lcc/status.h"

namespace lcc::http {

struct AdminTarget {
  std::string host;   // "127.0.0.1"
  std::string port;   // "7780"
  std::string token;  // may be empty: the daemon then answers 401
};

// --http HOST:PORT wins over listen.http of `config_file`. The token comes from the
// LCC_ADMIN_TOKEN environment variable when set, else <node.data_dir>/admin.token of
// `config_file` (the file is optional when --http and LCC_ADMIN_TOKEN are given).
// A wildcard listen address (0.0.0.0, ::) is reached on loopback.
Result<AdminTarget> resolveAdminTarget(const std::string& config_file, const std::string& http_override);

struct ClientResponse {
  int status = 0;
  std::string body;
};

// One request with `Authorization: Bearer <token>`; `form` (urlencoded) is sent as
// the body of a POST. Errors: a connection or protocol failure, with a clear message.
Result<ClientResponse> adminRequest(const AdminTarget& target, const std::string& method, const std::string& path,
                                    const std::string& form = "", int timeout_ms = 30000);

// "error" of a JSON error body, or the body itself (trimmed) when it is not JSON.
std::string errorText(const ClientResponse& r);

// One admin call for the `lcc` command: resolves the target, sends the request,
// and on a 2xx answer returns on_ok(response). Otherwise prints one line
// "lcc: <why>" to `err` and returns the exit code: 2 for a usage, configuration or
// connection problem or a 400 answer; 1 for a refusal or "not found" (401, 403,
// 404, 5xx).
int runAdminCommand(const std::string& config_file, const std::string& http_override, const std::string& method,
                    const std::string& path, const std::string& form,
                    const std::function<int(const ClientResponse&)>& on_ok, std::ostream& err);

}  // namespace lcc::http
