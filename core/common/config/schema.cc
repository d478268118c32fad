// schema.cc — every core configuration key, its type, default, bounds and meaning.
// This table is the single source of defaults (Postfix's DEF_* habit); etc/lcc.yaml
// and docs/configuration.md describe the same keys, and `lccd --print-defaults`
// prints this table. Plugin options are declared by each plugin, not here.
#include "config.h"

namespace lcc {

namespace {
constexpr std::int64_t kNoMin = 1, kNoMax = 0;  // min > max: no bounds
constexpr std::int64_t kSec = 1000, kMin = 60 * kSec, kHour = 60 * kMin, kDay = 24 * kHour;
constexpr std::int64_t kMiB = 1024 * 1024, kGiB = 1024 * kMiB;
}  // namespace

const std::vector<KeySpec>& Config::schema() {
  static const std::vector<KeySpec> kSchema = {
      // --- node ---
      {"node.data_dir", KeyType::kString, "./var", 1, 4096, "databases, spool, content, admin token"},
      {"node.machine_id", KeyType::kString, "m1", 1, 64, "this machine's id; content files are tagged with it"},
      {"roles", KeyType::kStringList, "uns,qm,botm,bot,cu,rs", kNoMin, kNoMax,
       "roles this lccd runs: uns, qm, botm, bot, cu, rs (http runs whenever any role does)"},
      {"threads", KeyType::kInt, "0", 0, 64,
       "io_context worker threads (0: 1 when no role but botm and bot runs, else 2)"},
      // --- log ---
      {"log.level", KeyType::kString, "info", 1, 5, "debug, info, warn or error"},
      {"log.file", KeyType::kString, "", 0, 4096, "log file (empty: stderr); SIGHUP reopens it"},
      // --- listen ---
      {"listen.uns", KeyType::kHostPort, "127.0.0.1:7700", kNoMin, kNoMax, "CPs connect here (docs/protocol.md §1)"},
      {"listen.qm", KeyType::kHostPort, "127.0.0.1:7701", kNoMin, kNoMax, "UNSes connect here"},
      {"listen.botm", KeyType::kHostPort, "127.0.0.1:7702", kNoMin, kNoMax,
       "BOT-Ms connect here to their url source (the QM, or a parent BOT-M)"},
      {"listen.robots", KeyType::kHostPort, "127.0.0.1:7703", kNoMin, kNoMax, "robots connect here (docs/protocol.md §4)"},
      {"listen.cu", KeyType::kHostPort, "127.0.0.1:7704", kNoMin, kNoMax, "CU queries (docs/protocol.md §3)"},
      {"listen.http", KeyType::kHostPort, "127.0.0.1:7780", kNoMin, kNoMax,
       "registration pages, /cu/query, /status, /metrics, admin API"},
      // --- storage ---
      {"storage.plugin_dir", KeyType::kString, "./build/plugins", 1, 4096, "where <plugin>.so files are"},
      {"storage.queue", KeyType::kPlugin, "storage-kyoto", kNoMin, kNoMax, "QDB, QPSDB, FSMDB"},
      {"storage.content", KeyType::kPlugin, "storage-kyoto", kNoMin, kNoMax, "the LCC DB"},
      {"storage.providers", KeyType::kPlugin, "storage-kyoto", kNoMin, kNoMax, "the PIDB"},
      {"fetcher", KeyType::kPlugin, "fetch-curl", kNoMin, kNoMax, "the robots' fetcher"},
      {"fetch.redirects", KeyType::kString, "prefix", 1, 6,
       "redirects a fetch follows: prefix (under the provider's prefixes), host (same host) or none (310 otherwise)"},
      {"exporters", KeyType::kPluginList, "cu-xml,cu-tar", kNoMin, kNoMax, "CU output formats"},
      {"accept_mime", KeyType::kStringList, "text/*,application/pdf,application/xml", kNoMin, kNoMax,
       "MIME patterns CPs may send (type/subtype or type/*)"},
      // --- uns ---
      {"uns.qm", KeyType::kString, "", 0, 300, "QM address the UNS forwards to (empty: listen.qm)"},
      {"uns.max_connections", KeyType::kInt, "1000", 1, 1000000, "CP connections at once, in total"},
      {"uns.max_connections_per_ip", KeyType::kInt, "64", 1, 1000000, "CP connections at once from one address"},
      {"uns.max_connections_per_provider", KeyType::kInt, "4", 1, 1000000, "sessions at once of one provider"},
      {"uns.idle_timeout", KeyType::kDuration, "30s", 100, 7 * kDay, "longest silence from a CP (133)"},
      {"uns.session_timeout", KeyType::kDuration, "1h", 100, 7 * kDay, "longest whole session (133)"},
      {"uns.max_attribute_length", KeyType::kSize, "8KiB", 64, 64 * kMiB, "longest attribute value (101)"},
      {"uns.max_depth", KeyType::kInt, "8", 2, 1000, "deepest element nesting (101)"},
      {"uns.max_set_urls", KeyType::kInt, "1000000", 1, 1000000000, "most <url> elements in one set (132)"},
      {"uns.max_url_length", KeyType::kInt, "2048", 16, 1000000, "longest URL after urlprefix (201)"},
      {"uns.report_errors", KeyType::kInt, "20", 1, 100000, "most error <url> containers in init_accepted"},
      {"uns.spool_limit", KeyType::kSize, "1GiB", 4096, 1LL << 50, "spool size past which sets get 130"},
      {"uns.qm_retry", KeyType::kDuration, "1s", 10, kHour, "how often an absent QM is tried again"},
      {"uns.qm_ack_timeout", KeyType::kDuration, "30s", 100, kHour, "wait for the QM's ack before spooling instead"},
      {"uns.fullsets_per_period", KeyType::kInt, "3", 0, 1000000, "unsolicited full sets allowed per period"},
      {"uns.fullset_period", KeyType::kDuration, "30d", kMin, 3650 * kDay, "the full-set allowance period"},
      {"uns.password_hash_ops", KeyType::kString, "interactive", 1, 16,
       "Argon2id cost for passwords an administrator chooses: interactive or moderate (libsodium)"},
      {"uns.auth_cache_entries", KeyType::kInt, "4096", 0, 1LL << 24,
       "successful Argon2id checks remembered (per provider, dropped when the password changes); 0: none"},
      // --- qm ---
      {"qm.queue_high", KeyType::kInt, "10000000", 1, 1LL << 40, "queued URLs above which the QM stops listening"},
      {"qm.queue_low", KeyType::kInt, "8000000", 0, 1LL << 40, "queued URLs below which it listens again"},
      {"qm.slots", KeyType::kInt, "24", 1, 10080, "time-of-day slots per period"},
      {"qm.slot_period", KeyType::kDuration, "1d", kMin, 366 * kDay, "the period the slots divide (a day, a week)"},
      {"qm.merge_interval", KeyType::kDuration, "1h", kSec, 7 * kDay, "longest wait between slot merges (they also run at every slot boundary)"},
      {"qm.bandwidth_tick", KeyType::kDuration, "4s", 10, kHour, "bandwidth-delay wheel interval"},
      {"qm.bandwidth_horizon", KeyType::kDuration, "1h", kSec, 7 * kDay,
       "longest bandwidth delay; beyond it the set moves to a time slot"},
      {"qm.provider_inflight", KeyType::kInt, "1", 1, 1000, "URLs of one provider fetched at once"},
      {"qm.botm_overload_pct", KeyType::kInt, "150", 100, 10000, "percent of the BOT-M's capacity kept in flight"},
      {"qm.max_retries", KeyType::kInt, "3", 0, 1000, "retries of a URL before its error is final"},
      {"qm.retry_delay", KeyType::kDuration, "1m", 0, 7 * kDay, "delay before a bad URL is tried again"},
      {"qm.provider_error_delay", KeyType::kDuration, "10m", 0, 7 * kDay,
       "delay of a whole set after a provider-wide error (DNS, connect)"},
      {"qm.max_errors_kept", KeyType::kInt, "100", 1, 1000000, "fetch errors kept per provider for the CP"},
      {"qm.age_warn", KeyType::kDuration, "90d", kMin, 3650 * kDay, "unrefreshed records raise wanted (old-files)"},
      {"qm.age_expire", KeyType::kDuration, "180d", kMin, 3650 * kDay, "unrefreshed records are removed (expired-files)"},
      {"qm.age_check_interval", KeyType::kDuration, "6h", kSec, 30 * kDay, "how often ageing runs"},
      {"qm.tombstone_keep", KeyType::kDuration, "30d", kMin, 3650 * kDay, "how long removals stay visible to CUs"},
      {"qm.provider_refresh", KeyType::kDuration, "2s", 10, kHour,
       "how often the QM reads administrator changes (suspend, priority, bandwidth, remove) from the PIDB"},
      {"qm.checkpoint_interval", KeyType::kDuration, "2s", 10, kHour, "how often stores are synced and the journal trimmed"},
      {"qm.checkpoint_bytes", KeyType::kSize, "64MiB", kMiB, 64 * kGiB, "journal size that forces a checkpoint"},
      {"qm.group_commit_delay", KeyType::kDuration, "0ms", 0, kSec, "extra wait to gather sets into one sync"},
      {"qm.max_fetch_size", KeyType::kSize, "50MiB", 1, 64 * kGiB, "largest content stored (308)"},
      {"qm.apply_batch_ops", KeyType::kInt, "20000", 100, 10000000, "store operations per batch when a large set is applied"},
      {"qm.delete_window", KeyType::kInt, "64", 1, 100000, "file deletes outstanding per BOT-M link"},
      {"qm.delete_retry", KeyType::kDuration, "1m", kSec, kDay,
       "periodic retry of failed file deletes, and the first back-off of a failed one"},
      {"qm.delete_retry_max", KeyType::kDuration, "1h", kSec, 7 * kDay,
       "ceiling of a failed delete's back-off (doubled per failure)"},
      // --- botm ---
      {"botm.source", KeyType::kString, "", 0, 300, "url source to connect to (empty: listen.botm)"},
      {"botm.content_dir", KeyType::kString, "", 0, 4096, "content files (empty: <data_dir>/content)"},
      {"botm.fanout", KeyType::kInt, "256", 2, 65536, "subfolders per level (two levels)"},
      {"botm.child_overload_pct", KeyType::kInt, "150", 100, 10000, "percent of a child BOT-M's capacity kept in flight"},
      {"botm.reconnect_min", KeyType::kDuration, "200ms", 10, kHour, "first reconnect delay to the url source"},
      {"botm.reconnect_max", KeyType::kDuration, "30s", 10, kDay, "longest reconnect delay"},
      {"botm.parent", KeyType::kBool, "false", kNoMin, kNoMax,
       "this BOT-M serves other BOT-Ms (forwards, no filename management)"},
      {"botm.max_queued", KeyType::kInt, "100000", 1, 100000000,
       "fetches a BOT-M holds waiting for a slot; more are answered 130"},
      {"botm.content_url", KeyType::kString, "auto", 0, 2048,
       "where other machines read this BOT-M's content files (GET <url>/content/<file>); "
       "auto: http://<listen.http>; empty: not advertised"},
      // --- bot ---
      {"bot.robots", KeyType::kInt, "1", 0, 1024, "robots run inside lccd when the bot role is on"},
      {"bot.slots", KeyType::kInt, "32", 1, 4096, "parallel fetches per robot"},
      {"bot.connect", KeyType::kString, "", 0, 300, "BOT-M robot port (empty: listen.robots)"},
      {"bot.sweep_temp_files", KeyType::kBool, "true", kNoMin, kNoMax,
       "at start, remove robots' temporary files (<file>.<pid>-<n>.tmp) whose process is gone"},
      {"bot.sync_files", KeyType::kBool, "false", kNoMin, kNoMax,
       "fsync each content file and its folder before reporting it stored (slower; see core/bot/README.md)"},
      // --- cu ---
      {"cu.max_connections", KeyType::kInt, "64", 1, 100000, "CU connections at once"},
      {"cu.idle_timeout", KeyType::kDuration, "30s", 100, kDay, "wait for a query"},
      {"cu.default_limit", KeyType::kInt, "0", 0, 1LL << 40, "records per answer when the query has no limit (0: all)"},
      {"cu.max_query_bytes", KeyType::kSize, "64KiB", 1024, 64 * kMiB, "largest query document"},
      {"cu.export_threads", KeyType::kInt, "8", 1, 1024, "worker threads running exports (off the io threads)"},
      {"cu.write_timeout", KeyType::kDuration, "5m", 100, kDay, "longest a client may take no answer bytes"},
      {"cu.pipe_buffer", KeyType::kSize, "256KiB", 4096, 64 * kMiB, "answer bytes buffered per connection"},
      {"cu.url_order_formats", KeyType::kStringList, "tar.gz", kNoMin, kNoMax,
       "formats answered in URL order (better compression) instead of change order"},
      {"cu.url_order_scan_factor", KeyType::kInt, "4", 0, 1000000,
       "URL order only when store records <= factor x matching records (0: never)"},
      {"cu.temp_dir", KeyType::kString, "", 0, 4096, "exporters' temporary files (empty: <data_dir>/tmp)"},
      {"cu.content_urls", KeyType::kStringList, "", kNoMin, kNoMax,
       "machine=http://host:port entries: where content of other machines is read (wins over what the QM learns)"},
      {"cu.remote_connect_timeout", KeyType::kDuration, "5s", 10, kHour,
       "connecting to another machine's HTTP port to read content"},
      {"cu.remote_read_timeout", KeyType::kDuration, "30s", 10, kHour,
       "longest silence while reading content from another machine"},
      {"cu.remote_pipeline", KeyType::kInt, "8", 1, 1024,
       "requests for another machine's content sent ahead on its connection (1: one at a time)"},
      // --- rs ---
      {"rs.secret_ttl", KeyType::kDuration, "7d", kMin, 365 * kDay, "how long a secret/password pair waits for verification"},
      {"rs.secret_file", KeyType::kString, "lococa-secret.txt", 1, 255, "file name the provider puts the secret in"},
      {"rs.default_priority", KeyType::kInt, "0", -1000, 1000, "priority of newly registered providers"},
      {"rs.default_bandwidth", KeyType::kSize, "0", 0, 1LL << 40, "bytes/s of new providers (0: unlimited)"},
      {"rs.default_quota_files", KeyType::kInt, "100000", 0, 1LL << 40, "file quota of new providers (0: unlimited)"},
      {"rs.default_quota_bytes", KeyType::kSize, "1GiB", 0, 1LL << 50, "byte quota of new providers (0: unlimited)"},
      {"rs.verify_timeout", KeyType::kDuration, "20s", 100, kDay, "longest wait for the secret file fetch at verification"},
      {"rs.secret_max_size", KeyType::kSize, "4KiB", 64, kMiB, "largest secret file the RS reads"},
      {"rs.sweep_interval", KeyType::kDuration, "1h", 1000, kDay, "how often expired pending registrations are removed"},
      {"rs.max_pending", KeyType::kInt, "1000", 1, 10000000, "registrations waiting for verification at once (more: 503)"},
      // --- http ---
      {"http.admin_remote", KeyType::kBool, "false", kNoMin, kNoMax, "allow the admin API from non-loopback peers"},
      {"http.max_body", KeyType::kSize, "1MiB", 1024, kGiB, "largest request body"},
      {"http.idle_timeout", KeyType::kDuration, "30s", 100, kDay, "keep-alive and read timeout"},
      {"http.max_connections", KeyType::kInt, "256", 1, 1000000, "HTTP connections at once (more: 503)"},
      {"http.workers", KeyType::kInt, "4", 1, 1024, "threads running HTTP handlers"},
      {"http.stream_workers", KeyType::kInt, "4", 1, 1024, "threads producing streamed answers (/cu/query)"},
      {"http.stream_buffer", KeyType::kSize, "256KiB", 4096, 64 * kMiB, "streamed answer bytes queued per connection"},
      {"http.max_header", KeyType::kSize, "16KiB", 1024, kMiB, "request line and header fields (more: 431)"},
      {"http.header_timeout", KeyType::kDuration, "10s", 100, kDay, "first byte to end of a request header (slow clients are cut)"},
  };
  return kSchema;
}

}  // namespace lcc
