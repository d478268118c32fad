#include "mail/notifier.h"

#include <spdlog/spdlog.h>

#include "lcc/support/time_util.h"

namespace lcc::mail {

using nlohmann::json;

Notifier::Notifier(ProviderStore& providers, std::shared_ptr<Mailer> mailer, Clock& clock, Env& env,
                   NotifierOptions options, MissingSource missing)
    : providers_(providers), mailer_(std::move(mailer)), clock_(clock), env_(env), options_(std::move(options)),
      policy_(options_.policy), missing_(std::move(missing)) {}

void Notifier::load() {
  if (!env_.exists(options_.state_path)) return;
  auto text = env_.readFile(options_.state_path);
  json j = text.isOk() ? json::parse(text.value(), nullptr, false) : json();
  if (!j.is_object() || !j.contains("providers") || !j["providers"].is_object()) {
    spdlog::warn("mail: {} is unreadable or not the mail state ({}); starting without it", options_.state_path,
                 text.isOk() ? "not JSON" : text.status().toString());
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [id_text, events] : j["providers"].items()) {
    const ProviderId id = static_cast<ProviderId>(std::strtoull(id_text.c_str(), nullptr, 10));
    if (id == 0 || !events.is_object()) continue;
    for (const auto& [name, m] : events.items()) {
      auto e = mailEventFromName(name);
      if (!e || !m.is_object()) continue;
      LastMail& l = last_[id][*e];
      l.at = fromUnixMillis(m.value("at_ms", std::int64_t{0}));
      l.sent = m.value("sent", false);
      l.error = m.value("error", std::string());
      l.key = m.value("key", std::string());
    }
  }
}

void Notifier::saveLocked() {
  json providers = json::object();
  for (const auto& [id, events] : last_) {
    json e = json::object();
    for (const auto& [event, m] : events) {
      e[std::string(mailEventName(event))] =
          json{{"at_ms", toUnixMillis(m.at)}, {"sent", m.sent}, {"error", m.error}, {"key", m.key}};
    }
    providers[std::to_string(id)] = std::move(e);
  }
  Status s = env_.writeFileAtomic(options_.state_path, json{{"providers", providers}}.dump() + "\n");
  if (!s.isOk()) spdlog::warn("mail: could not write {}: {} (a restart may mail again)", options_.state_path, s.toString());
}

std::size_t Notifier::check() {
  if (!mailer_->enabled()) return 0;
  std::vector<ProviderRecord> records;
  Status s = providers_.scan([&](const ProviderRecord& p) {
    records.push_back(p);  // pending ones too: their registration mail is kept (the policy skips them)
    return true;
  });
  if (!s.isOk()) {
    spdlog::warn("mail: reading the provider store: {}", s.toString());
    return 0;
  }
  const auto missing = missing_ ? missing_() : std::map<ProviderId, SecretMissing>{};
  NotifyDecision d;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Providers that are gone take their mail state with them.
    std::set<ProviderId> present;
    for (const auto& p : records) present.insert(p.id);
    bool changed = false;
    for (auto it = last_.begin(); it != last_.end();) {
      if (present.count(it->first) == 0) {
        it = last_.erase(it);
        changed = true;
      } else {
        ++it;
      }
    }
    d = policy_.decide(records, last_, missing, clock_.now());
    for (const auto& [id, event] : d.ended) {
      last_[id][event].key.clear();
      changed = true;
    }
    if (changed) saveLocked();
  }
  std::size_t queued = 0;
  for (DueMail& m : d.send) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!in_flight_.insert({m.id, m.event}).second) continue;  // still being sent
    }
    queue(m.id, m.event, m.key, std::move(m.message));
    ++queued;
  }
  return queued;
}

void Notifier::queue(ProviderId id, MailEvent event, const std::string& key, MailMessage msg) {
  std::weak_ptr<Notifier> weak = weak_from_this();
  Status s = mailer_->send(std::move(msg), [weak, id, event, key](const MailOutcome& out) {
    if (auto self = weak.lock()) self->record(id, event, key, out);
  });
  if (!s.isOk()) record(id, event, key, MailOutcome{false, s.message(), 0});
}

Status Notifier::sendNow(ProviderId id, MailEvent event, MailMessage msg) {
  LCC_RETURN_IF_ERROR(checkAddress(msg.to));
  if (!mailer_->enabled()) return Status::notSupported("this LCC sends no mail (mail.relay is empty)");
  {
    std::lock_guard<std::mutex> lock(mu_);
    in_flight_.insert({id, event});
  }
  std::weak_ptr<Notifier> weak = weak_from_this();
  Status s = mailer_->send(std::move(msg), [weak, id, event](const MailOutcome& out) {
    if (auto self = weak.lock()) self->record(id, event, "", out);
  });
  if (!s.isOk()) record(id, event, "", MailOutcome{false, s.message(), 0});
  return s;
}

void Notifier::record(ProviderId id, MailEvent event, const std::string& key, const MailOutcome& out) {
  std::lock_guard<std::mutex> lock(mu_);
  in_flight_.erase({id, event});
  LastMail& l = last_[id][event];
  l.at = clock_.now();
  l.sent = out.sent;
  l.error = out.error;
  l.key = key;
  saveLocked();
}

json Notifier::lastMails(ProviderId id) const {
  std::lock_guard<std::mutex> lock(mu_);
  json out = json::object();
  auto it = last_.find(id);
  if (it != last_.end()) {
    for (const auto& [event, m] : it->second) {
      json j{{"at", formatRfc3339(m.at)}, {"result", m.sent ? "sent" : "failed"}};
      if (!m.error.empty()) j["error"] = m.error;
      out[std::string(mailEventName(event))] = std::move(j);
    }
  }
  for (const auto& [pid, event] : in_flight_) {
    if (pid == id) out[std::string(mailEventName(event))]["result"] = "queued";
  }
  return out;
}

void Notifier::start(std::function<void(std::function<void()>)> post) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    post_ = std::move(post);
  }
  scheduleCheck();
}

void Notifier::scheduleCheck() {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_ || !mailer_->enabled()) return;
  std::weak_ptr<Notifier> weak = weak_from_this();
  timer_ = clock_.schedule(options_.check_interval, [weak] {
    auto self = weak.lock();
    if (!self) return;
    std::function<void(std::function<void()>)> post;
    {
      std::lock_guard<std::mutex> l(self->mu_);
      if (self->stopped_) return;
      post = self->post_;
    }
    auto work = [weak] {
      if (auto s = weak.lock()) {
        s->check();
        s->scheduleCheck();
      }
    };
    if (post) post(work);
    else work();
  });
}

void Notifier::stop() {
  std::lock_guard<std::mutex> lock(mu_);
  stopped_ = true;
  if (timer_ != 0) clock_.cancel(timer_);
  timer_ = 0;
}

}  // namespace lcc::mail
