#include "mail/notify_policy.h"

#include <algorithm>

#include "lcc/support/time_util.h"

namespace lcc::mail {
namespace {

struct Condition {
  MailEvent event;
  std::string key;
  std::string subject;
  std::string body;
};

std::string prefixes(const ProviderRecord& p) {
  std::string out;
  for (const auto& x : p.prefixes) out += "  " + x + "\n";
  return out;
}

bool nearly(std::uint64_t used, std::uint64_t quota, std::uint32_t percent) {
  return quota > 0 && used * 100 >= quota * percent;  // both far below 2^57: no overflow
}

std::optional<Condition> quotaCondition(const ProviderRecord& p, std::uint32_t percent) {
  const bool files = nearly(p.used_files, p.quota_files, percent);
  const bool bytes = nearly(p.used_bytes, p.quota_bytes, percent);
  if (!files && !bytes) return std::nullopt;
  std::string body = "Your provider uses " + std::to_string(percent) + "% or more of its quota:\n";
  if (p.quota_files > 0) body += "  files: " + std::to_string(p.used_files) + " of " + std::to_string(p.quota_files) + "\n";
  if (p.quota_bytes > 0) body += "  bytes: " + std::to_string(p.used_bytes) + " of " + std::to_string(p.quota_bytes) + "\n";
  body += "Past the quota, new URLs are refused (error 113). Delete what the LCC need not keep, or ask its "
          "administrator for a larger quota.\n";
  return Condition{MailEvent::kQuotaNearlyUsed, files && bytes ? "files+bytes" : files ? "files" : "bytes",
                   "quota nearly used", body};
}

// Every condition of `p` that is on now.
std::vector<Condition> conditions(const ProviderRecord& p, const SecretMissing* missing, std::uint32_t percent) {
  std::vector<Condition> out;
  if (p.state == ProviderState::kSuspended) {
    const std::string why = p.state_reason.empty() ? " by an administrator." : ": " + p.state_reason;
    out.push_back({MailEvent::kSuspended, p.state_reason.empty() ? "administrator" : p.state_reason, "suspended",
                   "Your provider is suspended" + why +
                       "\nIts notifications are refused (error 111) until it is active again. If the secret file "
                       "was the reason, put it back and verify again on the registration page.\n"});
  }
  if (p.state != ProviderState::kActive) return out;
  if (p.fullset_wanted && p.fullset_reason != FullSetReason::kFirstConnect && p.fullset_reason != FullSetReason::kNone) {
    const std::string reason(fullSetReasonName(p.fullset_reason));
    out.push_back({MailEvent::kFullSetWanted, reason, "a full set is wanted (" + reason + ")",
                   "The LCC wants a full set of your site (reason: " + reason +
                       "). Your content provider is told so at its next connection; run it (a full scan) soon.\n"});
  }
  if (auto q = quotaCondition(p, percent)) out.push_back(std::move(*q));
  if (missing != nullptr) {
    out.push_back({MailEvent::kSecretMissing, std::to_string(toUnixMillis(missing->since)), "the secret file is missing",
                   "Re-verification found no secret file at\n  " + p.secret_url + "\nsince " +
                       formatRfc3339(missing->since) + ". Put it back (it holds the secret you were given at "
                       "registration). Unless it is back, the provider is suspended at " +
                       formatRfc3339(missing->suspend_at) + ".\n"});
  }
  return out;
}

// "2 days", "6 hours", "30 minutes".
std::string interval(Millis d) {
  const std::int64_t minutes = d.count() / 60000;
  if (minutes % 1440 == 0) return std::to_string(minutes / 1440) + (minutes == 1440 ? " day" : " days");
  if (minutes % 60 == 0) return std::to_string(minutes / 60) + (minutes == 60 ? " hour" : " hours");
  return std::to_string(minutes) + (minutes == 1 ? " minute" : " minutes");
}

}  // namespace

std::string_view mailEventName(MailEvent e) {
  switch (e) {
    case MailEvent::kRegistration: return "registration";
    case MailEvent::kSuspended: return "suspended";
    case MailEvent::kFullSetWanted: return "fullset_wanted";
    case MailEvent::kQuotaNearlyUsed: return "quota_nearly_used";
    case MailEvent::kSecretMissing: return "secret_missing";
  }
  return "unknown";
}

std::optional<MailEvent> mailEventFromName(std::string_view name) {
  for (MailEvent e : kAllMailEvents) {
    if (mailEventName(e) == name) return e;
  }
  return std::nullopt;
}

NotifyDecision NotifyPolicy::decide(const std::vector<ProviderRecord>& providers,
                                    const std::map<ProviderId, ProviderMails>& last,
                                    const std::map<ProviderId, SecretMissing>& missing, WallTime now) const {
  NotifyDecision d;
  for (const ProviderRecord& p : providers) {
    if (p.state == ProviderState::kPending || !checkAddress(p.contact).isOk()) continue;
    auto m = missing.find(p.id);
    std::vector<Condition> on = conditions(p, m == missing.end() ? nullptr : &m->second, options_.quota_warn_percent);
    auto mailed = last.find(p.id);
    for (MailEvent e : kAllMailEvents) {
      if (e == MailEvent::kRegistration) continue;  // sent by the RS at step one
      const LastMail* prev = nullptr;
      if (mailed != last.end()) {
        auto it = mailed->second.find(e);
        if (it != mailed->second.end()) prev = &it->second;
      }
      auto c = std::find_if(on.begin(), on.end(), [e](const Condition& x) { return x.event == e; });
      if (c == on.end()) {
        if (prev != nullptr && !prev->key.empty()) d.ended.emplace_back(p.id, e);
        continue;
      }
      if (prev != nullptr && prev->sent && prev->key == c->key) continue;      // told already
      if (prev != nullptr && now - prev->at < options_.min_interval) continue;  // mail.min_interval
      MailMessage msg;
      msg.to = p.contact;
      msg.subject = "LCC provider " + std::to_string(p.id) + ": " + c->subject;
      msg.body = c->body + "\nProvider " + std::to_string(p.id) + ", prefixes:\n" + prefixes(p) +
                 "\nThe LCC tells each kind of event once while it lasts, and at most once every " +
                 interval(options_.min_interval) + ".\n";
      d.send.push_back({p.id, e, c->key, std::move(msg)});
    }
  }
  return d;
}

MailMessage registrationMail(const std::string& to, ProviderId id, const std::string& password,
                             const std::string& secret, const std::string& secret_url, WallTime expires) {
  MailMessage m;
  m.to = to;
  m.subject = "LCC registration of provider " + std::to_string(id);
  m.body = "You asked the LCC to register a content provider and to mail you its credentials.\n\n"
           "Provider id: " + std::to_string(id) + "\nPassword:    " + password + "\nSecret:      " + secret +
           "\n\nPut the secret, alone, in a file that can be fetched from\n  " + secret_url +
           "\nthen verify on the registration page before " + formatRfc3339(expires) +
           " (unverified registrations are removed then).\n\nIf you did not ask for this, ignore this mail: "
           "nothing happens unless the secret appears on that site.\n";
  return m;
}

}  // namespace lcc::mail
