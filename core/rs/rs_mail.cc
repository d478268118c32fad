// rs_mail.cc — what the RS adds for mail (issue 29): the Mailer's options checked
// (MailerOptions::fromConfig reads them), and GET /admin/mail/<id> for `lcc provider show`.
#include <nlohmann/json.hpp>

#include "common/config/config.h"
#include "http/admin_api.h"
#include "http/url_codec.h"
#include "rs/rs_service.h"

namespace lcc::rs {

Result<mail::MailerOptions> mailerOptions(const Config& cfg, Metrics* metrics) {
  mail::MailerOptions m = mail::MailerOptions::fromConfig(cfg);
  if (!m.relay.empty() && m.relay.rfind("smtp://", 0) != 0 && m.relay.rfind("smtps://", 0) != 0) {
    return Status::invalidArgument("mail.relay must be smtp://host:port or smtps://host:port (got " + m.relay + ")");
  }
  if (Status s = mail::checkAddress(m.from); !s.isOk()) {
    return Status::invalidArgument("mail.from: " + s.message() + " (got " + m.from + ")");
  }
  m.metrics = metrics;
  return m;
}

void registerMailRoutes(http::Router& router, std::shared_ptr<mail::Notifier> notifier, Env& env,
                        std::string token_file, bool allow_remote) {
  router.add("GET", "/admin/mail/", [notifier, env = &env, token_file, allow_remote](const http::Request& req) {
    const std::string token = http::readAdminToken(*env, token_file);
    if (auto refused = http::checkAdminAccess(req, token, allow_remote)) return *refused;
    auto id = http::parseUnsigned(req.path.substr(std::string_view("/admin/mail/").size()), 0xffffffffull);
    if (!id || *id == 0) {
      return http::Response::json(400, nlohmann::json{{"error", "GET /admin/mail/<provider id>"}}.dump() + "\n");
    }
    nlohmann::json j{{"id", *id}, {"enabled", notifier->enabled()}, {"mail", notifier->lastMails(*id)}};
    return http::Response::json(200, j.dump() + "\n");
  });
}

}  // namespace lcc::rs
