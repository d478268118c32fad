// mailer.h — sends e-mail through one SMTP relay (mail.relay) on its own thread
// (README.md in this folder). Nothing that queues a mail waits for it: send() only
// queues, a bounded queue; a failed attempt is tried again mail.retries times,
// mail.retry_delay apart (timers on the Clock), then given up and logged.
// THREADS: every method is thread-safe; `done` runs on the mail thread (lcc-mail).
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "common/metrics.h"
#include "lcc/clock.h"
#include "mail/mail_message.h"

namespace lcc {
class Config;
}

namespace lcc::mail {

// Members with a config key carry no default: fromConfig() (mail_options.cc) reads
// the schema's (lcc::rs::mailerOptions also checks relay and from).
struct MailerOptions {
  std::string relay;           // mail.relay: smtp://host:port or smtps://host:port; empty: no mail
  std::string from;            // mail.from
  Millis timeout{};            // mail.timeout: one attempt, connection to last reply
  std::uint32_t retries = 0;   // mail.retries: attempts after the first
  Millis retry_delay{};        // mail.retry_delay
  std::size_t queue_size = 0;  // mail.queue_size: mails queued, waiting for a retry or being sent
  Metrics* metrics = nullptr;  // no config key: lcc_mail_* counters when set

  static MailerOptions fromConfig(const Config& config);
};

// How one mail ended: sent, or given up (error: the last attempt's reason).
struct MailOutcome {
  bool sent = false;
  std::string error;
  std::uint32_t attempts = 0;
};
using MailDone = std::function<void(const MailOutcome&)>;

class Mailer {
 public:
  Mailer(Clock& clock, MailerOptions options);
  ~Mailer();
  Mailer(const Mailer&) = delete;
  Mailer& operator=(const Mailer&) = delete;

  // false when mail.relay is empty: send() refuses everything.
  bool enabled() const { return !options_.relay.empty(); }
  // Starts the mail thread (once; nothing without a relay).
  void start();
  // Queues `msg`. NotSupported when mail is off, Aborted once stopped, Busy when
  // mail.queue_size mails are held (counted, logged); `done` then never runs.
  // InvalidArgument when the address is not one (checkAddress).
  Status send(MailMessage msg, MailDone done);
  // Stops the thread; queued mails and retries are dropped (logged with their count).
  void stop();
  // Mails queued, waiting for a retry or being sent.
  std::size_t held() const;
  const MailerOptions& options() const { return options_; }

 private:
  struct Item {
    MailMessage msg;
    MailDone done;
    std::uint32_t attempts = 0;
  };
  void run();
  // One SMTP transaction through libcurl; the reason when it failed.
  Status deliver(const MailMessage& msg);
  void attempted(Item item, const Status& s);

  Clock& clock_;
  MailerOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  std::set<TimerId> retry_timers_;
  std::size_t held_ = 0;
  std::uint64_t next_id_ = 1;
  bool started_ = false;
  bool stopped_ = false;
  std::atomic<bool> aborting_{false};  // stop(): ends a transfer in progress
  std::thread thread_;
  Counter* sent_ = nullptr;
  Counter* failed_ = nullptr;
  Counter* retried_ = nullptr;
  Counter* dropped_ = nullptr;
};

}  // namespace lcc::mail
