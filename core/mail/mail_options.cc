// mail_options.cc — the mail options structs from the config: the one place that maps
// the mail.* keys to members.
#include "common/config/config.h"
#include "mail/mailer.h"
#include "mail/notifier.h"
#include "mail/notify_policy.h"

namespace lcc::mail {

MailerOptions MailerOptions::fromConfig(const Config& cfg) {
  MailerOptions o;
  o.relay = cfg.getString("mail.relay");
  o.from = cfg.getString("mail.from");
  o.timeout = Millis(cfg.getInt("mail.timeout"));
  o.retries = static_cast<std::uint32_t>(cfg.getInt("mail.retries"));
  o.retry_delay = Millis(cfg.getInt("mail.retry_delay"));
  o.queue_size = static_cast<std::size_t>(cfg.getInt("mail.queue_size"));
  return o;
}

NotifyPolicyOptions NotifyPolicyOptions::fromConfig(const Config& cfg) {
  NotifyPolicyOptions o;
  o.min_interval = Millis(cfg.getInt("mail.min_interval"));
  o.quota_warn_percent = static_cast<std::uint32_t>(cfg.getInt("mail.quota_warn_percent"));
  return o;
}

NotifierOptions NotifierOptions::fromConfig(const Config& cfg) {
  NotifierOptions o;
  o.check_interval = Millis(cfg.getInt("mail.check_interval"));
  o.policy = NotifyPolicyOptions::fromConfig(cfg);
  return o;
}

}  // namespace lcc::mail
