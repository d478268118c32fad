#include "front/lcc_client.h"

#include "http/admin_api.h"
#include "http/url_codec.h"
#include "net/host_port.h"

namespace lcc::front {

using nlohmann::json;

LccAnswer LccClient::call(const LccSpec& lcc, const std::string& method, const std::string& path,
                          const std::string& form) const {
  return request(timeout_, lcc, method, path, form);
}

LccAnswer LccClient::callWithin(Millis timeout, const LccSpec& lcc, const std::string& method,
                                const std::string& path) const {
  return request(timeout, lcc, method, path, "");
}

LccAnswer LccClient::request(Millis timeout, const LccSpec& lcc, const std::string& method, const std::string& path,
                             const std::string& form) const {
  auto hp = net::HostPort::parseTarget(lcc.admin);
  if (!hp.isOk()) return hp.status();
  http::AdminTarget t;
  t.host = hp.value().host;
  t.port = hp.value().portString();
  t.token = env_ ? http::readAdminToken(*env_, lcc.token_file) : std::string();
  if (lcc.admin_tls) {  // https://: the certificate checked against ca= (or the node's client context)
    t.tls = lcc.tls ? lcc.tls->current() : nullptr;
    if (!t.tls) return Status::ioError("admin API " + lcc.adminAddress() + ": no TLS client context");
    t.server_name = lcc.tls_name;
  }
  auto r = http::adminRequest(t, method, path, form, static_cast<int>(timeout.count()));
  if (!r.isOk()) return Status::ioError("admin API " + lcc.adminAddress() + ": " + r.status().message());
  return r;
}

Result<LccClient::Load> LccClient::load(const LccSpec& lcc) const {
  auto r = call(lcc, "GET", "/admin/status");
  if (!r.isOk()) return r.status();
  if (r.value().status != 200) {
    return Status::ioError("sub-LCC " + lcc.name + ": /admin/status answered " + std::to_string(r.value().status) +
                           ": " + http::errorText(r.value()));
  }
  json j = json::parse(r.value().body, nullptr, false);
  if (j.is_discarded() || !j.contains("providers") || !j["providers"].is_object()) {
    return Status::ioError("sub-LCC " + lcc.name + ": /admin/status has no providers summary");
  }
  Load l;
  l.providers = j["providers"].value("total", std::uint64_t{0});
  return l;
}

Result<std::optional<std::uint64_t>> LccClient::findMarked(const LccSpec& lcc, const std::string& marker) const {
  auto r = call(lcc, "GET", "/admin/providers");
  if (!r.isOk()) return r.status();
  if (r.value().status != 200) {
    return Status::ioError("sub-LCC " + lcc.name + ": /admin/providers answered " + std::to_string(r.value().status));
  }
  json j = json::parse(r.value().body, nullptr, false);
  if (j.is_discarded() || !j.contains("providers") || !j["providers"].is_array()) {
    return Status::ioError("sub-LCC " + lcc.name + ": /admin/providers: not a provider list");
  }
  for (const auto& p : j["providers"]) {
    const std::string state = p.is_object() ? p.value("state", std::string()) : std::string();
    if (state == "removing" || state == "purging") continue;  // on its way out: not the one to use
    if (p.is_object() && p.value("contact", std::string()) == marker) {
      return std::optional<std::uint64_t>(p.value("id", std::uint64_t{0}));
    }
  }
  return std::optional<std::uint64_t>();
}

std::string encodeForm(const std::multimap<std::string, std::string>& query, const std::string& skip) {
  std::string form;
  for (const auto& [k, v] : query) {
    if (k == skip) continue;
    if (!form.empty()) form += '&';
    form += http::percentEncode(k);
    form += '=';
    form += http::percentEncode(v);
  }
  return form;
}

}  // namespace lcc::front
