// notifier.h — mails site owners about their providers (README.md in this folder).
// Every mail.check_interval it reads the provider store, asks NotifyPolicy what to
// send and hands that to the Mailer; it remembers the last mail of each event for each
// provider in a small file (written through Env, atomically) so a restart sends
// nothing twice. It never blocks on mail: the Mailer queues.
// THREADS: thread-safe. check() runs where start()'s `post` runs it (the io_context);
// outcomes are recorded on the mail thread.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>

#include "lcc/env.h"
#include "lcc/provider_store.h"
#include "mail/mailer.h"
#include "mail/notify_policy.h"

namespace lcc::mail {

struct NotifierOptions {
  Millis check_interval{};             // mail.check_interval (no default here: the schema's)
  NotifyPolicyOptions policy;          // mail.min_interval, mail.quota_warn_percent
  std::string state_path;              // no config key: <data_dir>/rs/mail-state.json

  static NotifierOptions fromConfig(const Config& config);  // mail_options.cc
};

class Notifier : public std::enable_shared_from_this<Notifier> {
 public:
  // Providers whose secret file re-verification found missing (the RS's knowledge).
  using MissingSource = std::function<std::map<ProviderId, SecretMissing>()>;
  Notifier(ProviderStore& providers, std::shared_ptr<Mailer> mailer, Clock& clock, Env& env, NotifierOptions options,
           MissingSource missing = {});

  // Reads the state file (none: nothing mailed yet; unreadable or corrupt: logged,
  // started empty).
  void load();
  // Checks every mail.check_interval on the clock; `post` runs the check off the clock thread.
  void start(std::function<void(std::function<void()>)> post);
  void stop();
  // One round: returns how many mails it queued.
  std::size_t check();
  // A mail the RS sends itself (step one's credentials), recorded like the others.
  Status sendNow(ProviderId id, MailEvent event, MailMessage msg);
  // {"suspended": {"at", "result": "sent"|"failed"|"queued", "error"}...} for `lcc provider show`.
  nlohmann::json lastMails(ProviderId id) const;
  bool enabled() const { return mailer_->enabled(); }

 private:
  void scheduleCheck();
  void queue(ProviderId id, MailEvent event, const std::string& key, MailMessage msg);
  void record(ProviderId id, MailEvent event, const std::string& key, const MailOutcome& out);
  // Writes the state file; mu_ held.
  void saveLocked();

  ProviderStore& providers_;
  std::shared_ptr<Mailer> mailer_;
  Clock& clock_;
  Env& env_;
  NotifierOptions options_;
  NotifyPolicy policy_;
  MissingSource missing_;
  std::function<void(std::function<void()>)> post_;
  mutable std::mutex mu_;
  std::map<ProviderId, ProviderMails> last_;
  std::set<std::pair<ProviderId, MailEvent>> in_flight_;
  TimerId timer_ = 0;
  bool stopped_ = false;
};

}  // namespace lcc::mail
