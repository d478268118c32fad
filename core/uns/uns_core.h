// uns_core.h — what all CP sessions of one UNS share: authentication against the
// PIDB, the per-provider connection cap, the full-set allowance, clearing reported
// errors. (The caps in total and per address are the listener's: net::Acceptor with
// max_connections and max_connections_per_ip from here.) No sockets; thread-safe (a mutex for the counters; the
// ProviderStore is thread-safe itself). Its PIDB writes go through one
// ProviderCommitter: the writes of concurrent sessions share one sync.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/address_limiter.h"
#include "common/password.h"
#include "lcc/clock.h"
#include "uns/auth_cache.h"
#include "uns/provider_committer.h"
#include "lcc/provider_store.h"
#include "uns/session_policy.h"

namespace lcc {
class Config;
}

namespace lcc::uns {

// Members with a config key carry no default: fromConfig() (uns_options.cc) reads the
// schema's. Tests start from CoreConfig::fromConfig(Config::defaults()).
struct CoreConfig {
  std::vector<std::string> accept_mime;           // accept_mime
  std::uint64_t max_connections = 0;              // uns.max_connections
  std::uint64_t max_connections_per_ip = 0;       // uns.max_connections_per_ip
  std::uint64_t max_connections_per_provider = 0;  // uns.max_connections_per_provider
  std::uint64_t report_errors = 0;                // uns.report_errors
  std::uint64_t fullsets_per_period = 0;          // uns.fullsets_per_period
  Millis fullset_period{};                        // uns.fullset_period
  std::uint64_t auth_cache_entries = 0;           // uns.auth_cache_entries
  // Failed inits (110) per address per minute before the address gets 120 for
  // auth_cooldown without a password check (0: no limit); addresses tracked at most.
  std::uint64_t auth_failures_per_minute = 0;     // uns.auth_failures_per_minute
  Millis auth_cooldown{};                         // uns.auth_cooldown
  std::uint64_t auth_tracked_addresses = 0;       // uns.auth_tracked_addresses
  // No config key: checks passwords (common/password.h); null: a key of this process only.
  std::shared_ptr<const PasswordHasher> passwords;

  static CoreConfig fromConfig(const Config& config);
};

// A provider's URLs still queued as the PIDB's own queue tables hold them
// (ProviderStore::queuedUrls: storage-postgres, where the QM of another host writes
// them); 0 when the store cannot tell (its queue lives on the QM's host) or fails.
std::uint64_t queuedUrlsInStore(ProviderStore* providers, ProviderId pid);

class UnsCore {
 public:
  // `queued_urls`: the QM of this process's count (init_accepted "processing");
  // empty: queuedUrlsInStore().
  UnsCore(CoreConfig config, ProviderStore* providers, Clock* clock,
          std::function<std::uint64_t(ProviderId)> queued_urls,
          std::function<std::uint64_t()> free_space = nullptr);

  using AuthDone = std::function<void(AuthResult)>;
  using Done = ProviderCommitter::Done;

  // init from `peer_ip`: refused with 120 at once (r.throttled) while the address is
  // cooling down after too many failed inits; else checkAndAdmit, and a 110 counts
  // against the address. `done` gets the result: a refusal at once (on this thread),
  // an admission once the connection is counted in the PIDB and synced (on the
  // committer's thread; post the rest). A generated token is checked in a
  // microsecond; a chosen password's Argon2id check takes about 100 ms the first time
  // (then AuthCache remembers it): call it off the connection's strand.
  // `offload`, when given, runs a task elsewhere: a password whose stored hash is
  // Argon2id is checked there, a generated token (the common case) here, without a
  // hand-off between threads.
  using Offload = std::function<void(std::function<void()>)>;
  void authenticate(const AuthRequest& request, const std::string& peer_ip, AuthDone done,
                    const Offload& offload = nullptr);
  // The same, waiting for the result (tests, tools).
  AuthResult authenticate(const AuthRequest& request, const std::string& peer_ip);
  // The session of an authenticated provider ended.
  void releaseProvider(ProviderId pid);
  // Read when a session hands a set to the forwarder (a whole set, or a streamed set's
  // first part): kNone while the provider is active; kNotActive (with the init's
  // message) when an administrator suspended or removed it since the init — a slot
  // move suspends it before it reads what the QM holds, so no set passes after that;
  // kOffline when the PIDB cannot be read (try later).
  ErrorCode stillActive(ProviderId pid, std::string* message);

  // The init_accepted carrying these errors was written completely: they are dropped
  // from the PIDB; `done` as for authenticate.
  void clearReportedErrors(const WrittenAction& action, Done done);
  Status clearReportedErrors(const WrittenAction& action);  // waits
  // A set of `pid` was accepted: a full set clears the wanted flag, or uses one of
  // the period's unsolicited full sets. `done` runs at once for a partial set (nothing
  // to write), else once the change is synced.
  void setAccepted(ProviderId pid, SetKind kind, bool was_wanted, Done done);
  Status setAccepted(ProviderId pid, SetKind kind, bool was_wanted);  // waits

  // How the PIDB writes were grouped (tests, /status).
  ProviderCommitter::Stats commitStats() const { return committer_.stats(); }

  // Connections open now, as the listener counts them (countConnectionsWith).
  std::uint64_t connections() const;
  void countConnectionsWith(std::function<std::uint64_t()> count);

 private:
  // What checkAndAdmit found: a refusal (result.code set), or a provider whose
  // password and state are good and who holds a per-provider slot.
  struct Admission {
    AuthResult result;
    std::string stored_hash;    // the hash the password was checked against
    std::string upgraded_hash;  // a fast hash to store in its place, or empty
  };
  // The provider id of an init, 0 when it is not one (1..2^32-1 in decimal).
  static ProviderId parseId(const std::string& id);
  // True when the init's password is checked against an Argon2id hash (slow).
  bool slowCheck(const AuthRequest& request);
  // init: checks the id, the password and the provider's state, takes a per-provider slot.
  Admission checkAndAdmit(const AuthRequest& request);
  // Counts the connection in the PIDB (seq, last IP and time, the full-set period) and,
  // once that is synced, gives `done` the init_accepted data.
  void countConnection(Admission admission, const std::string& peer_ip, AuthDone done);
  // The init_accepted data from the record as it was before this connection counted;
  // `processing`: the provider's queued URLs, read before the PIDB write.
  AuthResult admitted(ProviderId pid, const ProviderRecord& rec, std::uint64_t processing) const;
  // True when `password` is the provider's; sets *upgrade to a fast hash to store
  // in place of a slow one that protected a generated token.
  bool checkPassword(ProviderId pid, const std::string& stored, const std::string& password, std::string* upgrade);

  CoreConfig config_;
  AuthCache auth_cache_;
  AddressLimiter auth_limiter_;
  ProviderStore* providers_;
  Clock* clock_;
  std::function<std::uint64_t(ProviderId)> queued_urls_;
  std::function<std::uint64_t()> free_space_;
  mutable std::mutex mu_;
  std::function<std::uint64_t()> connection_count_;
  std::map<ProviderId, std::uint64_t> per_provider_;
  // Last: stopped (its queue committed, its callbacks run) before the rest goes.
  ProviderCommitter committer_;
};

}  // namespace lcc::uns
