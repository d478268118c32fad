// notify_policy.h — which mails a provider's owner should get now (README.md in this
// folder). Pure: it takes the provider records, what was mailed before and the time,
// and returns the mails to send; the Notifier does the I/O.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lcc/types.h"
#include "mail/mail_message.h"

namespace lcc {
class Config;
}

namespace lcc::mail {

enum class MailEvent : std::uint8_t {
  kRegistration = 0,   // step one's credentials, when the registrant asked (sent by the RS)
  kSuspended,          // the provider is suspended (the reason)
  kFullSetWanted,      // the LCC wants a full set (cache-crash, old-files, expired-files, admin)
  kQuotaNearlyUsed,    // files or bytes at mail.quota_warn_percent of the quota or more
  kSecretMissing,      // re-verification found no secret file; suspended after rs.reverify_grace
};
inline constexpr MailEvent kAllMailEvents[] = {MailEvent::kRegistration, MailEvent::kSuspended, MailEvent::kFullSetWanted,
                                               MailEvent::kQuotaNearlyUsed, MailEvent::kSecretMissing};
// "registration", "suspended", "fullset_wanted", "quota_nearly_used", "secret_missing".
std::string_view mailEventName(MailEvent e);
std::optional<MailEvent> mailEventFromName(std::string_view name);

// The last mail of one event to one provider.
struct LastMail {
  WallTime at{};        // when it was given up or sent
  bool sent = false;    // false: every attempt failed (error says why)
  std::string error;
  std::string key;      // the condition it told of ("" once the condition ended)
  friend bool operator==(const LastMail&, const LastMail&) = default;
};
using ProviderMails = std::map<MailEvent, LastMail>;

// What re-verification knows of a provider whose secret file is gone.
struct SecretMissing {
  WallTime since{};       // first found missing
  WallTime suspend_at{};  // since + rs.reverify_grace
};

// No member carries a default: fromConfig() (mail_options.cc) reads the schema's.
struct NotifyPolicyOptions {
  Millis min_interval{};               // mail.min_interval: per provider and event
  std::uint32_t quota_warn_percent = 0;  // mail.quota_warn_percent

  static NotifyPolicyOptions fromConfig(const Config& config);
};

struct DueMail {
  ProviderId id = 0;
  MailEvent event = MailEvent::kSuspended;
  std::string key;  // the condition, remembered so it is told once
  MailMessage message;
};

struct NotifyDecision {
  std::vector<DueMail> send;
  // (provider, event) whose condition ended: their key is forgotten, so the next
  // time it happens is told again.
  std::vector<std::pair<ProviderId, MailEvent>> ended;
};

class NotifyPolicy {
 public:
  explicit NotifyPolicy(NotifyPolicyOptions options) : options_(options) {}
  // A condition is told when it is on, its key differs from the last mail's or the
  // last mail failed, and the last mail of the event is mail.min_interval old or
  // more. Providers without a contact that passes checkAddress(), and pending ones,
  // get nothing.
  NotifyDecision decide(const std::vector<ProviderRecord>& providers, const std::map<ProviderId, ProviderMails>& last,
                        const std::map<ProviderId, SecretMissing>& missing, WallTime now) const;

 private:
  NotifyPolicyOptions options_;
};

// The message step one sends when the registrant asks for it.
MailMessage registrationMail(const std::string& to, ProviderId id, const std::string& password,
                             const std::string& secret, const std::string& secret_url, WallTime expires);

}  // namespace lcc::mail
