// rs_service.h — the rs role as lccd runs it (see README.md in this folder): the
// two-step provider registration of design document §3 on the HTTP port.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "common/password.h"
#include "common/service.h"
#include "http/http_server.h"

namespace lcc::rs {

struct RsOptions {
  Millis secret_ttl{7LL * 24 * 3600 * 1000};  // rs.secret_ttl
  std::string secret_file = "lococa-secret.txt";  // rs.secret_file
  std::int32_t default_priority = 0;              // rs.default_*
  std::uint64_t default_bandwidth = 0;
  std::uint64_t default_quota_files = 0;
  std::uint64_t default_quota_bytes = 0;
  Millis verify_timeout{20000};       // rs.verify_timeout (real time: the fetch is real)
  std::uint64_t secret_max_size = 4096;  // rs.secret_max_size
  Millis sweep_interval{3600 * 1000};    // rs.sweep_interval
  std::uint64_t max_pending = 1000;      // rs.max_pending
  std::shared_ptr<const PasswordHasher> passwords;  // <data_dir>/auth.key
  std::string work_dir;  // fetched secret files land here for a moment (<data_dir>/rs)
  Metrics* metrics = nullptr;  // lcc_rs_* counters when set
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
};

// Step two's answer.
struct Verification {
  int http_status = 200;       // 200 verified (or already active); 4xx/5xx why not
  bool active = false;
  std::string reason;          // one sentence for the page
  ErrorCode fetch_code = ErrorCode::kNone;  // the fetch outcome when it failed
  int fetch_http_status = 0;
};

// The registration logic, without HTTP (the routes below only translate).
// THREADS: every method is thread-safe; verify() blocks its caller (an HTTP worker)
// for at most verify_timeout while the fetch runs.
class Registrar : public std::enable_shared_from_this<Registrar> {
 public:
  Registrar(ProviderStore& providers, Fetcher& fetcher, Clock& clock, Env& env, RsOptions options);

  // Step one: a pending provider with a fresh secret and password. InvalidArgument
  // with the reason for a bad prefix or contact; Busy when max_pending wait already.
  Result<Registration> registerProvider(const std::string& prefix, const std::string& contact);
  // Step two: fetch the secret now and activate the provider when it matches.
  Verification verify(ProviderId id, const std::string& password);
  // Removes every pending registration whose expiry passed; returns how many.
  std::size_t sweepExpired();
  // Starts the periodic sweep on the clock; `post` runs the sweep off the clock thread.
  void startSweeping(std::function<void(std::function<void()>)> post);
  // Stops the sweep and cancels verifications in flight.
  void stop();

  const RsOptions& options() const { return options_; }

 private:
  void scheduleSweep();

  ProviderStore& providers_;
  Fetcher& fetcher_;
  Clock& clock_;
  Env& env_;
  RsOptions options_;
  std::function<void(std::function<void()>)> post_;
  std::mutex mu_;
  TimerId sweep_timer_ = 0;
  bool stopped_ = false;
  std::set<std::uint64_t> in_flight_;
  std::atomic<std::uint64_t> next_fetch_id_;
  Counter* registered_ = nullptr;
  Counter* verified_ = nullptr;
  Counter* verify_failed_ = nullptr;
  Counter* expired_ = nullptr;
};

// Normalises a registration prefix (url::normalizePrefix: the URL normal form, no
// query or fragment, a path ending with '/'), at most kMaxPrefixLength bytes.
// InvalidArgument with the reason otherwise.
inline constexpr std::size_t kMaxPrefixLength = 2048;
Result<std::string> normalizePrefix(const std::string& prefix);

// GET/POST /register, POST /register/verify (HTML, or JSON with format=json or
// Accept: application/json).
void registerRsRoutes(http::Router& router, std::shared_ptr<Registrar> registrar);

// Builds the role from the node's config, stores and plugins.
Result<ServicePtr> makeRsService(NodeContext& node);

}  // namespace lcc::rs
