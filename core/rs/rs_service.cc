#include "rs/rs_service.h"

#include <boost/asio/post.hpp>
#include <condition_variable>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "lcc/support/time_util.h"
#include "http/admin_api.h"
#include "http/url_codec.h"
#include "lcc/support/url_norm.h"

namespace lcc::rs {

using nlohmann::json;

std::string fetchOutcome(const FetchResult& r) {
  std::string out = std::to_string(static_cast<int>(r.code)) + " " + std::string(errorCodeMessage(r.code));
  if (r.http_status != 0) out += ", HTTP " + std::to_string(r.http_status);
  if (!r.message.empty() && r.message != errorCodeMessage(r.code)) out += ": " + r.message;
  return out;
}

Result<std::string> normalizePrefix(const std::string& prefix) { return url::normalizePrefix(prefix, kMaxPrefixLength); }

Registrar::Registrar(ProviderStore& providers, Fetcher& fetcher, Clock& clock, Env& env, RsOptions options)
    : providers_(providers), fetcher_(fetcher), clock_(clock), env_(env), options_(std::move(options)),
      // High ids: the fetcher may be shared with robots of this process.
      next_fetch_id_((1ull << 62) + 1),
      register_limiter_(AddressLimiterOptions{.max_events = options_.register_per_minute,
                                              .window = Millis(60 * 1000),
                                              .cooldown = Millis(0),
                                              .max_addresses = static_cast<std::size_t>(options_.register_tracked_addresses)},
                        &clock_) {
  if (!options_.passwords) options_.passwords = PasswordHasher::ephemeral();
  if (Metrics* m = options_.metrics) {
    registered_ = &m->counter("lcc_rs_registrations_total", "registrations (step one) accepted");
    verified_ = &m->counter("lcc_rs_verified_total", "registrations verified (provider activated)");
    verify_failed_ = &m->counter("lcc_rs_verify_failed_total", "verifications that failed (any reason)");
    expired_ = &m->counter("lcc_rs_expired_removed_total", "expired pending registrations removed");
    reverified_ = &m->counter("lcc_rs_reverified_total", "re-verifications that found the secret in place");
    reverify_unreachable_ = &m->counter("lcc_rs_reverify_unreachable_total",
                                        "re-verifications that could not fetch the secret file (retried)");
    reverify_suspended_ = &m->counter("lcc_rs_reverify_suspended_total",
                                      "providers suspended because re-verification failed");
    evicted_ = &m->counter("lcc_rs_pending_evicted_total",
                           "pending registrations removed to make room (rs.max_pending reached)");
    pending_refused_ = &m->counter("lcc_rs_pending_refused_total",
                                   "POST /register refused with 429: rs.max_pending_per_ip or rs.max_pending_per_host");
    register_throttled_ = &m->counter("lcc_rs_register_throttled_total",
                                      "POST /register refused with 429: rs.register_per_minute from the address");
  }
}

AddressLimiter::Decision Registrar::admitRegistration(const std::string& address) {
  AddressLimiter::Decision d = register_limiter_.check(address);
  if (d.allowed) {
    (void)register_limiter_.record(address);
  } else if (register_throttled_) {
    register_throttled_->inc();
  }
  return d;
}

Result<Registration> Registrar::registerProvider(const std::string& prefix_in, const std::string& contact_in,
                                                 const std::string& address, Millis* retry_after,
                                                 bool mail_credentials) {
  auto prefix = normalizePrefix(http::trimSpace(prefix_in));
  if (!prefix.isOk()) return Status::invalidArgument("prefix: " + prefix.status().message());
  std::string contact = http::trimSpace(contact_in);
  if (contact.size() > 256) return Status::invalidArgument("contact: longer than 256 characters");
  for (unsigned char c : contact) {
    if (c < 0x20 || c == 0x7f) {
      return Status::invalidArgument("contact: contains a control character (CR, LF, tab...): refused");
    }
  }
  if (mail_credentials) {
    if (Status a = mail::checkAddress(contact); !a.isOk()) {
      return Status::invalidArgument("contact: to mail you the credentials it must be an e-mail address: " + a.message());
    }
  }
  sweepExpired();  // lazily: expired registrations do not count against the limits
  // One registration at a time: the limits are counted and the record made together.
  std::lock_guard<std::mutex> lock(register_mu_);
  LCC_RETURN_IF_ERROR(makeRoom(prefix.value(), address, retry_after));
  Registration reg;
  reg.prefix = prefix.value();
  reg.secret = randomHex(16);
  reg.secret_file = options_.secret_file;
  auto secret_url = url::normalizeUrl(reg.prefix + options_.secret_file, kMaxPrefixLength + 256);
  if (!secret_url.isOk() || !url::underPrefix(secret_url.value(), reg.prefix)) {
    return Status::invalidArgument("rs.secret_file does not make a URL under the prefix");
  }
  reg.secret_url = std::move(secret_url).value();
  reg.password = PasswordHasher::generateToken();
  reg.expires = clock_.now() + options_.secret_ttl;
  ProviderRecord rec;
  rec.state = ProviderState::kPending;
  rec.password_hash = options_.passwords->hashToken(reg.password);
  rec.prefixes = {reg.prefix};
  options_.provider_defaults.applyTo(rec);
  rec.secret = reg.secret;
  rec.secret_url = reg.secret_url;
  rec.contact = contact;
  rec.last_ip = address;  // the registrant's, while pending (rs.max_pending_per_ip); cleared at verification
  rec.reg_expires = reg.expires;
  rec.created = clock_.now();
  LCC_ASSIGN_OR_RETURN(reg.id, providers_.create(rec));
  spdlog::info("rs: registration {} for {} (expires {})", reg.id, reg.prefix, formatRfc3339(reg.expires));
  if (registered_) registered_->inc();
  if (mail_credentials) {
    // Queued only: the mail thread sends it; this answer does not wait.
    Status m = options_.notifier
                   ? options_.notifier->sendNow(reg.id, mail::MailEvent::kRegistration,
                                                mail::registrationMail(contact, reg.id, reg.password, reg.secret,
                                                                       reg.secret_url, reg.expires))
                   : Status::notSupported("this LCC sends no mail (mail.relay is empty)");
    reg.mail = m.isOk() ? "queued" : "not sent: " + m.message();
  }
  return reg;
}

Verification Registrar::verify(ProviderId id, const std::string& password) {
  Verification v;
  auto fail = [&](int status, std::string reason) {
    v.http_status = status;
    v.reason = std::move(reason);
    if (status != 200 && verify_failed_) verify_failed_->inc();
    return v;
  };
  auto got = providers_.get(id);
  if (!got.isOk()) return fail(503, "the provider database is unavailable: " + got.status().message());
  if (!got.value()) return fail(404, "there is no registration with this id (unverified registrations are removed when they expire)");
  ProviderRecord rec = *got.value();
  const bool expired = rec.state == ProviderState::kPending && clock_.now() >= rec.reg_expires;
  if (!options_.passwords->verify(rec.password_hash, password).ok) {
    if (expired) (void)providers_.remove(id);
    return fail(403, "wrong id or password");
  }
  if (rec.state == ProviderState::kActive) {
    v.active = true;
    return fail(200, "provider " + std::to_string(id) + " is already verified and active");
  }
  const bool again = suspendedByReverification(rec);  // its file was gone or wrong: may show it again
  if (rec.state == ProviderState::kSuspended && !again) {
    return fail(403, rec.state_reason.empty() ? "this provider is suspended by an administrator"
                                              : "this provider is suspended: " + rec.state_reason);
  }
  if (rec.state != ProviderState::kPending && !again) {
    return fail(410, "this provider is being removed by an administrator");
  }
  if (expired) {
    if (providers_.remove(id).isOk() && expired_) expired_->inc();
    spdlog::info("rs: registration {} expired, removed", id);
    return fail(410, "this registration expired at " + formatRfc3339(rec.reg_expires) + " and was removed; register again");
  }

  // Fetch the secret now.
  auto waited = fetchSecretWaiting(rec);
  if (!waited.isOk()) {
    if (waited.status().code() == StatusCode::kAborted) return fail(503, "the registration server is stopping");
    return fail(502, "could not fetch " + rec.secret_url + ": " + waited.status().message());
  }
  if (!waited.value()) {
    v.fetch_code = ErrorCode::kFetchTimeout;
    return fail(504, "fetching " + rec.secret_url + " took longer than " +
                         std::to_string(options_.verify_timeout.count() / 1000.0).substr(0, 4) + " s");
  }
  const SecretFetch& fetched = *waited.value();
  const FetchResult& result = fetched.result;
  v.fetch_http_status = result.http_status;
  if (!result.ok()) {
    v.fetch_code = result.code;
    if (result.code == ErrorCode::kNotFound) {
      return fail(422, "the secret file was not found at " + rec.secret_url + " (" + fetchOutcome(result) + ")");
    }
    return fail(422, "could not fetch " + rec.secret_url + ": " + fetchOutcome(result));
  }
  if (!fetched.read_error.empty()) return fail(500, "could not read the fetched secret: " + fetched.read_error);
  if (!fetched.matches) {
    return fail(422, "the file at " + rec.secret_url + " does not hold the secret of this registration" +
                         (again ? " (the provider stays suspended: " + rec.state_reason + ")" : ""));
  }
  Status s = providers_.modify(id, [&](ProviderRecord& p) {
    if (p.state == ProviderState::kActive) return Status::ok();
    if (p.state != ProviderState::kPending && !suspendedByReverification(p)) {
      return Status::aborted("the provider is no longer pending");
    }
    if (p.state == ProviderState::kPending) p.last_ip.clear();  // the registrant's address, not a CP's
    p.state = ProviderState::kActive;
    p.state_reason.clear();
    // The secret stays: the file is fetched again every rs.reverify_interval.
    p.reg_expires = clock_.now() + options_.reverify_interval;
    return Status::ok();
  });
  if (s.code() == StatusCode::kNotFound) return fail(404, "the registration was removed meanwhile");
  if (!s.isOk()) return fail(503, "could not activate the provider: " + s.message());
  spdlog::info("rs: provider {} verified ({}), active", id, rec.secret_url);
  if (verified_) verified_->inc();
  v.active = true;
  const std::int64_t hours = options_.reverify_interval.count() / 3600000;
  const std::string keep = options_.reverify_interval.count() <= 0
                               ? "you may delete the secret file"
                               : "leave the secret file where it is: it is checked again every " +
                                     (hours % 24 == 0 ? std::to_string(hours / 24) + " days"
                                                      : std::to_string(std::max<std::int64_t>(hours, 1)) + " hours") +
                                     ", and the provider is suspended when it is gone or changed";
  return fail(200, "verified: provider " + std::to_string(id) + " is active; " + keep +
                       "; start sending notifications");
}

Result<std::optional<SecretFetch>> Registrar::fetchSecretWaiting(const ProviderRecord& rec) {
  struct Wait {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    SecretFetch got;
  };
  auto wait = std::make_shared<Wait>();
  LCC_ASSIGN_OR_RETURN(const std::uint64_t fid, fetchSecret(rec, [wait](SecretFetch f) {
                         std::lock_guard<std::mutex> lock(wait->mu);
                         wait->got = std::move(f);
                         wait->done = true;
                         wait->cv.notify_all();
                       }));
  std::unique_lock<std::mutex> lock(wait->mu);
  if (wait->cv.wait_for(lock, options_.verify_timeout, [&] { return wait->done; })) return std::optional<SecretFetch>(wait->got);
  lock.unlock();
  fetcher_.cancel(fid);
  lock.lock();
  // `done` runs exactly once, also on cancel (and removes the file).
  wait->cv.wait_for(lock, std::chrono::seconds(10), [&] { return wait->done; });
  return std::optional<SecretFetch>();
}

Result<std::uint64_t> Registrar::fetchSecret(const ProviderRecord& rec, std::function<void(SecretFetch)> done) {
  const std::uint64_t fid = next_fetch_id_++;
  FetchRequest req;
  req.id = fid;
  req.url = rec.secret_url;
  req.path = options_.work_dir + "/secret-" + std::to_string(rec.id) + "-" + std::to_string(fid) + ".tmp";
  req.max_size = options_.secret_max_size;
  // Never off the prefix: an open redirect elsewhere on the site must not verify it.
  req.redirects = RedirectPolicy::kPrefix;
  req.redirect_prefixes = rec.prefixes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return Status::aborted("the registration server is stopping");
    in_flight_.insert(fid);
  }
  std::weak_ptr<Registrar> weak = weak_from_this();
  const std::string secret = rec.secret;
  Env* env = &env_;
  Status started = fetcher_.start(req, [weak, env, fid, path = req.path, secret, done](const FetchResult& r) {
    SecretFetch got;
    got.result = r;
    if (r.ok()) {
      auto body = env->readFile(path);
      if (!body.isOk()) got.read_error = body.status().message();
      got.matches = body.isOk() && http::constantTimeEquals(http::trimSpace(body.value()), secret);
    }
    if (env->exists(path)) (void)env->removeFile(path);
    if (auto self = weak.lock()) {
      std::lock_guard<std::mutex> lock(self->mu_);
      self->in_flight_.erase(fid);
    }
    done(std::move(got));
  });
  if (!started.isOk()) {
    std::lock_guard<std::mutex> lock(mu_);
    in_flight_.erase(fid);
    return started.code() == StatusCode::kAborted ? Status::internal(started.message()) : started;
  }
  return fid;
}

std::size_t Registrar::sweepExpired() {
  const WallTime now = clock_.now();
  std::vector<ProviderId> expired;
  Status s = providers_.scan([&](const ProviderRecord& p) {
    if (p.state == ProviderState::kPending && now >= p.reg_expires) expired.push_back(p.id);
    return true;
  });
  if (!s.isOk()) {
    spdlog::warn("rs: sweep of expired registrations: {}", s.toString());
    return 0;
  }
  std::size_t removed = 0;
  for (ProviderId id : expired) {
    // Re-check: a verification may have activated it meanwhile.
    auto cur = providers_.get(id);
    const bool still_expired = cur.isOk() && cur.value() && cur.value()->state == ProviderState::kPending &&
                               now >= cur.value()->reg_expires;
    if (still_expired && providers_.remove(id).isOk()) ++removed;
  }
  if (removed > 0) spdlog::info("rs: removed {} expired registration(s)", removed);
  if (expired_) expired_->inc(removed);
  return removed;
}

void Registrar::startSweeping(std::function<void(std::function<void()>)> post) {
  loadMissing();
  {
    std::lock_guard<std::mutex> lock(mu_);
    post_ = std::move(post);
  }
  scheduleSweep();
}

void Registrar::scheduleSweep() {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_) return;
  std::weak_ptr<Registrar> weak = weak_from_this();
  sweep_timer_ = clock_.schedule(options_.sweep_interval, [weak] {
    auto self = weak.lock();
    if (!self) return;
    std::function<void(std::function<void()>)> post;
    {
      std::lock_guard<std::mutex> lock(self->mu_);
      if (self->stopped_) return;
      post = self->post_;
    }
    auto work = [weak] {
      if (auto s = weak.lock()) {
        s->sweepExpired();
        s->reverifyDue();
        s->scheduleSweep();
      }
    };
    if (post) post(work);
    else work();
  });
}

void Registrar::stop() {
  std::set<std::uint64_t> in_flight;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    reverify_queue_.clear();
    if (sweep_timer_ != 0) clock_.cancel(sweep_timer_);
    sweep_timer_ = 0;
    in_flight = in_flight_;
  }
  for (auto fid : in_flight) fetcher_.cancel(fid);
}

// ---------------------------------------------------------------------------
// HTTP pages.
namespace {

bool wantsJson(const http::Request& req) {
  return req.param("format") == "json" || req.header("accept").find("application/json") != std::string::npos;
}

std::string page(const std::string& title, const std::string& body) {
  return "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + http::htmlEscape(title) +
         "</title></head>\n<body>\n<h1>" + http::htmlEscape(title) + "</h1>\n" + body +
         "<p><a href=\"/\">LCC home</a> · <a href=\"/register\">register</a></p>\n</body></html>\n";
}

std::string formPage(const RsOptions& o) {
  return page("Register as a content provider",
              "<p>Step one: give the URL prefix of your site (the folder your notifications will cover) and a "
              "contact. You get a provider id, a password and a secret. Put the secret in a file named <code>" +
                  http::htmlEscape(o.secret_file) +
                  "</code> at the top of that prefix, then come back for step two within " +
                  std::to_string(o.secret_ttl.count() / 3600000) +
                  " hours.</p>\n"
                  "<form method=\"post\" action=\"/register\">\n"
                  "<p><label>URL prefix <input name=\"prefix\" size=\"60\" placeholder=\"http://www.example.com/docs/\"></label></p>\n"
                  "<p><label>Contact (e-mail) <input name=\"contact\" size=\"40\"></label> "
                  "<label><input type=\"checkbox\" name=\"mail\" value=\"1\"> mail me the id, password and "
                  "secret</label></p>\n"
                  "<p><button type=\"submit\">Register</button></p>\n</form>\n"
                  "<h2>Step two: verify</h2>\n"
                  "<form method=\"post\" action=\"/register/verify\">\n"
                  "<p><label>Provider id <input name=\"id\" size=\"8\"></label> "
                  "<label>Password <input name=\"password\" type=\"password\" size=\"24\"></label></p>\n"
                  "<p><button type=\"submit\">Fetch my secret file now</button></p>\n</form>\n");
}

http::Response errorAnswer(const http::Request& req, int status, const std::string& why) {
  if (wantsJson(req)) return http::Response::json(status, json{{"ok", false}, {"error", why}}.dump() + "\n");
  return http::Response::html(status, page("Registration refused", "<p>" + http::htmlEscape(why) + "</p>\n"));
}

http::Response registerAnswer(const http::Request& req, Registrar& reg) {
  if (const AddressLimiter::Decision d = reg.admitRegistration(req.remote_ip); !d.allowed) {
    const std::int64_t seconds = std::max<std::int64_t>(1, (d.retry_after.count() + 999) / 1000);
    http::Response busy = errorAnswer(req, 429, "too many registrations from your address; try again in " +
                                                    std::to_string(seconds) + " s");
    busy.headers.emplace_back("Retry-After", std::to_string(seconds));
    return busy;
  }
  Millis retry_after{0};
  const std::string want_mail = req.param("mail");
  auto r = reg.registerProvider(req.param("prefix"), req.param("contact"), req.remote_ip, &retry_after,
                                want_mail == "1" || want_mail == "yes" || want_mail == "on" || want_mail == "true");
  if (!r.isOk() && r.status().code() == StatusCode::kBusy && retry_after.count() > 0) {
    // rs.max_pending_per_ip or rs.max_pending_per_host: until the oldest of those expires.
    const std::int64_t seconds = std::max<std::int64_t>(1, (retry_after.count() + 999) / 1000);
    http::Response busy = errorAnswer(req, 429, r.status().message());
    busy.headers.emplace_back("Retry-After", std::to_string(seconds));
    return busy;
  }
  if (!r.isOk()) {
    int status = r.status().code() == StatusCode::kInvalidArgument ? 400
                 : r.status().code() == StatusCode::kBusy         ? 503
                                                                  : 500;
    return errorAnswer(req, status, r.status().message());
  }
  const Registration& g = r.value();
  if (wantsJson(req)) {
    json j{{"ok", true},         {"id", g.id},         {"prefix", g.prefix},     {"secret", g.secret},
           {"secret_file", g.secret_file}, {"secret_url", g.secret_url}, {"password", g.password},
           {"expires", formatRfc3339(g.expires)}};
    if (!g.mail.empty()) j["mail"] = g.mail;
    return http::Response::json(200, j.dump() + "\n");
  }
  const std::string mailed = g.mail.empty() ? "" : "<p id=\"mail\">Mail of these credentials: " + http::htmlEscape(g.mail) + "</p>\n";
  const std::string keep = reg.options().reverify_interval.count() <= 0
                               ? "Once verified, the file is no longer needed."
                               : "Keep the file there afterwards: it is fetched again from time to time, and a "
                                 "provider whose file is gone or changed is suspended.";
  std::string e = http::htmlEscape(formatRfc3339(g.expires));
  return http::Response::html(
      200, page("Registration step one done",
                "<p>Your provider id: <b id=\"id\">" + std::to_string(g.id) + "</b></p>\n"
                "<p>Your password: <b id=\"password\">" + http::htmlEscape(g.password) +
                    "</b> (keep it: it is shown only now)</p>\n"
                    "<p>Put this secret, alone, in a file named <code id=\"secret_file\">" +
                    http::htmlEscape(g.secret_file) + "</code>:</p>\n<pre id=\"secret\">" +
                    http::htmlEscape(g.secret) + "</pre>\n<p>so that it can be fetched from <code id=\"secret_url\">" +
                    http::htmlEscape(g.secret_url) + "</code>, then verify before <b id=\"expires\">" + e +
                    "</b>; unverified registrations are removed then. " + keep + "</p>\n" + mailed +
                    "<form method=\"post\" action=\"/register/verify\">\n"
                    "<input type=\"hidden\" name=\"id\" value=\"" + std::to_string(g.id) + "\">\n"
                    "<p><label>Password <input name=\"password\" type=\"password\"></label> "
                    "<button type=\"submit\">Verify now</button></p>\n</form>\n"));
}

http::Response verifyAnswer(const http::Request& req, Registrar& reg) {
  auto id = http::parseUnsigned(req.param("id"), 0xffffffffull);
  if (!id || *id == 0) return errorAnswer(req, 400, "id must be the provider id you were given");
  if (req.param("password").empty()) return errorAnswer(req, 400, "the password is required");
  Verification v = reg.verify(static_cast<ProviderId>(*id), req.param("password"));
  if (wantsJson(req)) {
    json j{{"ok", v.active}, {"id", *id}, {"reason", v.reason}};
    if (!v.active) j["error"] = v.reason;
    if (v.fetch_code != ErrorCode::kNone) j["fetch_code"] = static_cast<int>(v.fetch_code);
    if (v.fetch_http_status != 0) j["fetch_http_status"] = v.fetch_http_status;
    return http::Response::json(v.http_status, j.dump() + "\n");
  }
  return http::Response::html(v.http_status, page(v.active ? "Registration verified" : "Verification failed",
                                                  "<p>" + http::htmlEscape(v.reason) + "</p>\n"));
}

// The role: the registrar, and the mailer and notifier that tell site owners
// (docs/design-decisions.md, "Mail to site owners").
class RsService final : public Service {
 public:
  RsService(std::shared_ptr<Registrar> reg, std::shared_ptr<mail::Mailer> mailer,
            std::shared_ptr<mail::Notifier> notifier, boost::asio::io_context* io)
      : reg_(std::move(reg)), mailer_(std::move(mailer)), notifier_(std::move(notifier)), io_(io) {}
  std::string_view name() const override { return "rs"; }
  Status start() override {
    boost::asio::io_context* io = io_;
    auto post = [io](std::function<void()> fn) {
      if (io) boost::asio::post(*io, std::move(fn));
      else fn();
    };
    reg_->startSweeping(post);
    mailer_->start();
    notifier_->load();
    notifier_->start(post);
    return Status::ok();
  }
  void stop() override {
    notifier_->stop();
    reg_->stop();
    mailer_->stop();
  }
  void status(nlohmann::json& out) const override {
    out["secret_file"] = reg_->options().secret_file;
    out["secret_ttl_s"] = reg_->options().secret_ttl.count() / 1000;
    out["reverify_interval_s"] = reg_->options().reverify_interval.count() / 1000;
    out["reverify_pending"] = reg_->reverifyPending();
    out["mail"] = mailer_->enabled();
    out["mail_held"] = mailer_->held();
  }

 private:
  std::shared_ptr<Registrar> reg_;
  std::shared_ptr<mail::Mailer> mailer_;
  std::shared_ptr<mail::Notifier> notifier_;
  boost::asio::io_context* io_;
};

}  // namespace

void registerRsRoutes(http::Router& router, std::shared_ptr<Registrar> registrar) {
  router.addExact("GET", "/register", [r = registrar](const http::Request& req) {
    if (wantsJson(req)) {
      return http::Response::json(200, json{{"secret_file", r->options().secret_file},
                                            {"secret_ttl_s", r->options().secret_ttl.count() / 1000},
                                            {"fields", {"prefix", "contact", "mail"}}}
                                           .dump() +
                                           "\n");
    }
    return http::Response::html(200, formPage(r->options()));
  });
  router.addExact("POST", "/register", [r = registrar](const http::Request& req) { return registerAnswer(req, *r); });
  router.addExact("POST", "/register/verify",
                  [r = registrar](const http::Request& req) { return verifyAnswer(req, *r); });
}

Result<ServicePtr> makeRsService(NodeContext& node) {
  if (node.providers == nullptr) return Status::invalidArgument("the rs role needs storage.providers");
  if (node.fetcher == nullptr) return Status::invalidArgument("the rs role needs a fetcher");
  if (node.http == nullptr || node.clock == nullptr || node.env == nullptr || node.config == nullptr) {
    return Status::invalidArgument("the rs role needs the HTTP port, a clock, an Env and the config");
  }
  const Config& cfg = *node.config;
  RsOptions o = RsOptions::fromConfig(cfg);
  if (o.secret_file.find('/') != std::string::npos || o.secret_file == "." || o.secret_file == "..") {
    return Status::invalidArgument("rs.secret_file must be a plain file name (got " + o.secret_file + ")");
  }
  if (!node.passwords) return Status::invalidArgument("the rs role needs the password key");
  o.passwords = node.passwords;
  o.work_dir = node.data_dir + "/rs";
  o.metrics = node.metrics;
  LCC_RETURN_IF_ERROR(node.env->createDirs(o.work_dir, DirOptions{.private_dir = true}));
  LCC_ASSIGN_OR_RETURN(mail::MailerOptions mo, mailerOptions(cfg, node.metrics));
  auto mailer = std::make_shared<mail::Mailer>(*node.clock, std::move(mo));
  mail::NotifierOptions no = mail::NotifierOptions::fromConfig(cfg);
  no.state_path = o.work_dir + "/mail-state.json";
  // The registrar tells the notifier which secret files are missing; it is made first.
  auto reg_slot = std::make_shared<std::weak_ptr<Registrar>>();
  auto notifier = std::make_shared<mail::Notifier>(*node.providers, mailer, *node.clock, *node.env, std::move(no),
                                                   [reg_slot] {
                                                     auto r = reg_slot->lock();
                                                     return r ? r->secretsMissing()
                                                              : std::map<ProviderId, mail::SecretMissing>{};
                                                   });
  o.notifier = notifier;
  auto reg = std::make_shared<Registrar>(*node.providers, *node.fetcher, *node.clock, *node.env, std::move(o));
  *reg_slot = reg;
  registerRsRoutes(*node.http, reg);
  registerMailRoutes(*node.http, notifier, *node.env, node.data_dir + "/admin.token", cfg.getBool("http.admin_remote"));
  return ServicePtr(new RsService(reg, mailer, notifier, node.io));
}

}  // namespace lcc::rs
