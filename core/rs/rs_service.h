// rs_service.h — the rs role as lccd runs it (see README.md in this folder): the
// two-step provider registration of design document §3 on the HTTP port.
#pragma once

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "common/address_limiter.h"
#include "common/password.h"
#include "common/provider_defaults.h"
#include "common/service.h"
#include "http/http_server.h"
#include "mail/notifier.h"

namespace lcc::rs {

// Members with a config key carry no default: fromConfig() (rs_options.cc) reads the
// schema's. Tests start from RsOptions::fromConfig(Config::defaults()).
struct RsOptions {
  Millis secret_ttl{};                         // rs.secret_ttl
  std::string secret_file;                     // rs.secret_file
  ProviderDefaults provider_defaults;          // rs.default_*: a registered provider's settings
  Millis verify_timeout{};                     // rs.verify_timeout (real time: the fetch is real)
  std::uint64_t secret_max_size = 0;           // rs.secret_max_size
  Millis sweep_interval{};                     // rs.sweep_interval
  std::uint64_t max_pending = 0;               // rs.max_pending (full: the oldest pending gives way)
  std::uint64_t max_pending_per_ip = 0;        // rs.max_pending_per_ip (0: no limit)
  std::uint64_t max_pending_per_host = 0;      // rs.max_pending_per_host: per host of the prefix (0: no limit)
  std::uint64_t register_per_minute = 0;       // rs.register_per_minute (0: no limit)
  std::uint64_t register_tracked_addresses = 0;  // rs.register_tracked_addresses
  Millis reverify_interval{};                  // rs.reverify_interval (0: never)
  Millis reverify_grace{};                     // rs.reverify_grace: gone this long, then suspended
  std::uint64_t reverify_failures = 0;         // rs.reverify_failures
  // No config key (set by the caller):
  std::shared_ptr<const PasswordHasher> passwords;  // <data_dir>/auth.key
  std::string work_dir;  // fetched secret files land here for a moment (<data_dir>/rs)
  Metrics* metrics = nullptr;  // lcc_rs_* counters when set
  // Mails step one's credentials when asked (null or off: none are sent).
  std::shared_ptr<mail::Notifier> notifier;

  static RsOptions fromConfig(const Config& config);
};

// Step one's answer.
struct Registration {
  ProviderId id = 0;
  std::string prefix;       // normalised: ends with '/'
  std::string secret;
  std::string secret_file;  // the file name
  std::string secret_url;   // prefix + secret_file: where the RS will look
  std::string password;
  WallTime expires{};
  std::string mail;  // asked for: "queued", or why it is not sent; "" when not asked
};

// Step two's answer.
struct Verification {
  int http_status = 200;       // 200 verified (or already active); 4xx/5xx why not
  bool active = false;
  std::string reason;          // one sentence for the page
  ErrorCode fetch_code = ErrorCode::kNone;  // the fetch outcome when it failed
  int fetch_http_status = 0;
};

// What fetching a provider's secret file found.
struct SecretFetch {
  FetchResult result;
  bool matches = false;    // fetched, and the body (whitespace trimmed) is the secret
  std::string read_error;  // fetched, but the body could not be read back
};

// What a re-verification found, and what follows (reverifyVerdict).
enum class ReverifyVerdict {
  kConfirmed,    // the file holds the secret: due again in rs.reverify_interval
  kGone,         // 301 (HTTP 404 or 410): suspended
  kChanged,      // fetched, another content: suspended
  kUnreachable,  // any other failure: retried at the next sweep; suspended after rs.reverify_failures in a row
};
ReverifyVerdict reverifyVerdict(const SecretFetch& got);
// Every reason re-verification writes starts so; such a provider may verify again
// through step two (an administrator's suspension has no reason).
inline constexpr std::string_view kReverifyReasonStart = "re-verification on ";
bool suspendedByReverification(const ProviderRecord& p);
// "301 not found, HTTP 404: message" for a reason or a page.
std::string fetchOutcome(const FetchResult& r);

// The registration logic, without HTTP (the routes below only translate).
// THREADS: every method is thread-safe; verify() blocks its caller (an HTTP worker)
// for at most verify_timeout while the fetch runs.
class Registrar : public std::enable_shared_from_this<Registrar> {
 public:
  Registrar(ProviderStore& providers, Fetcher& fetcher, Clock& clock, Env& env, RsOptions options);

  // Before step one for a client at `address`: allowed (and counted) while it made
  // fewer than rs.register_per_minute registrations in the last minute.
  AddressLimiter::Decision admitRegistration(const std::string& address);
  // Step one: a pending provider with a fresh secret and password, for a client at
  // `address` (kept in the record's last_ip while it is pending). InvalidArgument with
  // the reason for a bad prefix or contact. Busy with `*retry_after` set (the time
  // until the oldest of them expires) when rs.max_pending_per_ip registrations of the
  // address, or rs.max_pending_per_host of the prefix's host, are waiting. When
  // rs.max_pending are waiting, the oldest gives way (is removed; Busy only when that
  // fails).
  // `mail_credentials`: the registrant asked for the credentials by mail; the contact
  // must then be an e-mail address (mail::checkAddress; InvalidArgument otherwise).
  Result<Registration> registerProvider(const std::string& prefix, const std::string& contact,
                                        const std::string& address = "", Millis* retry_after = nullptr,
                                        bool mail_credentials = false);
  // Step two: fetch the secret now and activate the provider when it matches. Also
  // for a provider that re-verification suspended: it is active again once its file
  // holds the secret once more.
  Verification verify(ProviderId id, const std::string& password);
  // Removes every pending registration whose expiry passed; returns how many.
  std::size_t sweepExpired();
  // Re-verification (reverify.cc): queues every active provider that has a secret and
  // whose reg_expires (the due time) passed, and fetches their secret files again, a
  // few at a time. Asynchronous; the periodic sweep calls it. Returns how many it queued.
  std::size_t reverifyDue();
  // Re-verifications queued or running now.
  std::size_t reverifyPending() const;
  // Active providers whose secret file re-verification found gone, within
  // rs.reverify_grace (the notifier mails their owners). Kept in
  // <work_dir>/reverify-missing.json so a restart does not restart the grace.
  std::map<ProviderId, mail::SecretMissing> secretsMissing() const;
  // Reads that file (startSweeping does).
  void loadMissing();
  // Starts the periodic sweep on the clock; `post` runs the sweep off the clock thread.
  void startSweeping(std::function<void(std::function<void()>)> post);
  // Stops the sweep and cancels verifications in flight.
  void stop();

  const RsOptions& options() const { return options_; }

 private:
  void scheduleSweep();
  // The pending limits of registerProvider (pending_limits.cc); register_mu_ held.
  Status makeRoom(const std::string& prefix, const std::string& address, Millis* retry_after);
  // Starts fetching rec.secret_url (never following a redirect off rec.prefixes);
  // `done` runs exactly once, also on cancel, on the fetcher's thread, once the
  // fetched file is read and removed. Returns the fetch id (for Fetcher::cancel).
  Result<std::uint64_t> fetchSecret(const ProviderRecord& rec, std::function<void(SecretFetch)> done);
  // Step two's fetch: fetchSecret, waiting up to rs.verify_timeout, then cancelled
  // (nullopt: it timed out).
  Result<std::optional<SecretFetch>> fetchSecretWaiting(const ProviderRecord& rec);
  // Starts queued re-verifications while fewer than kReverifyInFlight run.
  void pumpReverify();
  void startReverify(ProviderId id);
  // The outcome of one re-verification: confirm, count a failure, or suspend.
  void reverified(const ProviderRecord& rec, const SecretFetch& got);
  void finishReverify(ProviderId id);
  // The first time the secret file was found gone (now, and saved, the first time).
  WallTime noteMissing(ProviderId id, WallTime now);
  void forgetMissing(ProviderId id);
  void saveMissingLocked();

  ProviderStore& providers_;
  Fetcher& fetcher_;
  Clock& clock_;
  Env& env_;
  RsOptions options_;
  std::function<void(std::function<void()>)> post_;
  mutable std::mutex mu_;
  std::mutex register_mu_;  // one registration counted and made at a time
  TimerId sweep_timer_ = 0;
  bool stopped_ = false;
  std::set<std::uint64_t> in_flight_;
  std::atomic<std::uint64_t> next_fetch_id_;
  AddressLimiter register_limiter_;
  std::deque<ProviderId> reverify_queue_;           // due, not started
  std::set<ProviderId> reverify_pending_;           // queued or running
  std::size_t reverify_running_ = 0;
  std::map<ProviderId, std::uint64_t> reverify_failures_;  // unreachable rounds in a row
  std::map<ProviderId, WallTime> missing_since_;           // secret file gone, within rs.reverify_grace
  Counter* registered_ = nullptr;
  Counter* verified_ = nullptr;
  Counter* verify_failed_ = nullptr;
  Counter* expired_ = nullptr;
  Counter* register_throttled_ = nullptr;
  Counter* evicted_ = nullptr;
  Counter* pending_refused_ = nullptr;
  Counter* reverified_ = nullptr;
  Counter* reverify_unreachable_ = nullptr;
  Counter* reverify_suspended_ = nullptr;
};

// Normalises a registration prefix (url::normalizePrefix: the URL normal form, no
// query or fragment, a path ending with '/'), at most kMaxPrefixLength bytes.
// InvalidArgument with the reason otherwise.
inline constexpr std::size_t kMaxPrefixLength = 2048;
Result<std::string> normalizePrefix(const std::string& prefix);
// The host of a normalised prefix, without the port ("www.example.org", "[::1]").
std::string prefixHost(std::string_view prefix);

// GET/POST /register, POST /register/verify (HTML, or JSON with format=json or
// Accept: application/json).
void registerRsRoutes(http::Router& router, std::shared_ptr<Registrar> registrar);

// GET /admin/mail/<id>: the last mail of each event to the provider's owner
// ({"id", "mail": {...}}), for `lcc provider show`; the admin API's token and peer
// rules (rs_mail.cc).
void registerMailRoutes(http::Router& router, std::shared_ptr<mail::Notifier> notifier, Env& env,
                        std::string token_file, bool allow_remote);
// The mail.* keys (mail.relay empty: a mailer that sends nothing). InvalidArgument
// for a relay that is not smtp:// or smtps:// or a bad mail.from.
Result<mail::MailerOptions> mailerOptions(const Config& cfg, Metrics* metrics);

// Builds the role from the node's config, stores and plugins.
Result<ServicePtr> makeRsService(NodeContext& node);

}  // namespace lcc::rs
