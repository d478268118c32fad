#include "mail/mailer.h"

#include <curl/curl.h>
#include <pthread.h>
#include <spdlog/spdlog.h>

#include <cstring>
#include <memory>

#include "common/password.h"

namespace lcc::mail {
namespace {

struct Upload {
  const std::string* data;
  std::size_t offset = 0;
};

std::size_t readUpload(char* buf, std::size_t size, std::size_t nitems, void* userdata) {
  auto* up = static_cast<Upload*>(userdata);
  const std::size_t n = std::min(size * nitems, up->data->size() - up->offset);
  std::memcpy(buf, up->data->data() + up->offset, n);
  up->offset += n;
  return n;
}

// The domain of the From address, for Message-IDs.
std::string domainOf(const std::string& address) {
  const auto at = address.rfind('@');
  return at == std::string::npos ? "lcc" : address.substr(at + 1);
}

// Ends a transfer in progress once stop() was called.
int abortWhenStopped(void* userdata, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<std::atomic<bool>*>(userdata)->load() ? 1 : 0;
}

}  // namespace

Mailer::Mailer(Clock& clock, MailerOptions options) : clock_(clock), options_(std::move(options)) {
  if (Metrics* m = options_.metrics) {
    sent_ = &m->counter("lcc_mail_sent_total", "mails the relay accepted");
    failed_ = &m->counter("lcc_mail_failed_total", "mails given up after mail.retries failed attempts");
    retried_ = &m->counter("lcc_mail_retries_total", "failed mail attempts tried again after mail.retry_delay");
    dropped_ = &m->counter("lcc_mail_dropped_total", "mails refused because mail.queue_size were held");
  }
}

Mailer::~Mailer() { stop(); }

void Mailer::start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (started_ || stopped_ || !enabled()) return;
  started_ = true;
  thread_ = std::thread([this] {
    ::pthread_setname_np(::pthread_self(), "lcc-mail");  // top -H, perf, gdb
    run();
  });
}

Status Mailer::send(MailMessage msg, MailDone done) {
  if (!enabled()) return Status::notSupported("this LCC sends no mail (mail.relay is empty)");
  LCC_RETURN_IF_ERROR(checkAddress(msg.to));
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_) return Status::aborted("the mailer is stopped");
  if (held_ >= options_.queue_size) {
    if (dropped_) dropped_->inc();
    spdlog::warn("mail: not sent to {} ({}): {} mails are held already (mail.queue_size)", msg.to, msg.subject, held_);
    return Status::busy("mail.queue_size mails are waiting");
  }
  ++held_;
  queue_.push_back(Item{std::move(msg), std::move(done), 0});
  cv_.notify_one();
  return Status::ok();
}

void Mailer::run() {
  for (;;) {
    Item item;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopped_ || !queue_.empty(); });
      if (stopped_) return;
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    ++item.attempts;
    const Status s = deliver(item.msg);
    attempted(std::move(item), s);
  }
}

void Mailer::attempted(Item item, const Status& s) {
  if (aborting_) return;  // stop() ended it: dropped, like the queued ones (not a failure of the relay)
  if (!s.isOk() && item.attempts <= options_.retries) {
    spdlog::info("mail: attempt {} to {} ({}) failed, tried again in {} s: {}", item.attempts, item.msg.to,
                 item.msg.subject, options_.retry_delay.count() / 1000, s.message());
    if (retried_) retried_->inc();
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    auto shared = std::make_shared<Item>(std::move(item));
    auto timer = std::make_shared<TimerId>(0);
    // The timer may fire before its id is known: the id is erased under the lock.
    *timer = clock_.schedule(options_.retry_delay, [this, shared, timer] {
      std::lock_guard<std::mutex> l(mu_);
      retry_timers_.erase(*timer);
      if (stopped_) return;
      queue_.push_back(std::move(*shared));
      cv_.notify_one();
    });
    retry_timers_.insert(*timer);
    return;
  }
  MailOutcome out{s.isOk(), s.isOk() ? std::string() : s.message(), item.attempts};
  if (s.isOk()) {
    if (sent_) sent_->inc();
    spdlog::info("mail: sent to {} ({})", item.msg.to, item.msg.subject);
  } else {
    if (failed_) failed_->inc();
    spdlog::warn("mail: gave up on the mail to {} ({}) after {} attempt(s): {}", item.msg.to, item.msg.subject,
                 item.attempts, s.message());
  }
  if (item.done) item.done(out);
  std::lock_guard<std::mutex> lock(mu_);
  if (held_ > 0) --held_;
}

Status Mailer::deliver(const MailMessage& msg) {
  std::string id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    id = std::to_string(toUnixMillis(clock_.now())) + "." + std::to_string(next_id_++) + "." + randomHex(4) + "@" +
         domainOf(options_.from);
  }
  const std::string data = formatMessage(msg, options_.from, clock_.now(), id);
  std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) return Status::internal("curl_easy_init failed");
  curl_slist* rcpt = curl_slist_append(nullptr, ("<" + msg.to + ">").c_str());
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> rcpt_guard(rcpt, curl_slist_free_all);
  Upload up{&data};
  char errbuf[CURL_ERROR_SIZE] = {0};
  CURL* c = curl.get();
  const std::string from = "<" + options_.from + ">";
  curl_easy_setopt(c, CURLOPT_URL, options_.relay.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "smtp,smtps");
  curl_easy_setopt(c, CURLOPT_MAIL_FROM, from.c_str());
  curl_easy_setopt(c, CURLOPT_MAIL_RCPT, rcpt);
  curl_easy_setopt(c, CURLOPT_READFUNCTION, readUpload);
  curl_easy_setopt(c, CURLOPT_READDATA, &up);
  curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.timeout.count()));
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.timeout.count()));
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, abortWhenStopped);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &aborting_);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  const CURLcode rc = curl_easy_perform(c);
  if (rc == CURLE_OK) return Status::ok();
  long smtp_code = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &smtp_code);
  std::string why = errbuf[0] != 0 ? std::string(errbuf) : std::string(curl_easy_strerror(rc));
  if (smtp_code != 0) why += " (SMTP " + std::to_string(smtp_code) + ")";
  return Status::ioError(options_.relay + ": " + why);
}

void Mailer::stop() {
  std::size_t dropped = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    aborting_ = true;
    for (TimerId t : retry_timers_) clock_.cancel(t);
    dropped = queue_.size() + retry_timers_.size();
    retry_timers_.clear();
    queue_.clear();
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  if (dropped > 0) spdlog::info("mail: stopping; {} mail(s) not sent", dropped);
}

std::size_t Mailer::held() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_;
}

}  // namespace lcc::mail
