// Issue 26 §3, "one home for each default": the options structs outside the QM engine
// are built from the config only (X::fromConfig), their defaults being the schema's.
// For each key a struct maps, the key is set to a value other than its default and the
// member must follow; a fromConfig that ignores (or misreads) a key fails here. And
// every key of the components covered is either mapped by a struct below or named,
// with the place that reads it, in kReadElsewhere: a new key nobody wires fails too.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "bot/robot.h"
#include "common/config/config.h"
#include "cu/cu_server.h"
#include "cu/peer_source.h"
#include "cu/query_engine.h"
#include "cu/remote_content.h"
#include "http/admin_api.h"
#include "http/http_server.h"
#include "indexnow/receiver.h"
#include "mail/mailer.h"
#include "net/address_ranges.h"
#include "mail/notifier.h"
#include "qm/botm_server.h"
#include "qm/intake_server.h"
#include "resourcesync/resourcesync.h"
#include "rs/rs_service.h"
#include "sitemap/sitemap_poll.h"
#include "uns/uns_service.h"

namespace lcc {
namespace {

// One member of one struct, read back as text so rows of any type compare alike.
struct Row {
  std::string key;     // the config key
  std::string member;  // "Struct.member", for the failure message
  std::function<std::string(const Config&)> read;
};

std::string text(std::int64_t v) { return std::to_string(v); }
std::string text(std::uint64_t v) { return std::to_string(v); }
std::string text(std::uint32_t v) { return std::to_string(v); }
std::string text(int v) { return std::to_string(v); }
std::string text(bool v) { return v ? "true" : "false"; }
std::string text(Millis v) { return std::to_string(v.count()) + "ms"; }
std::string text(const std::string& v) { return v; }
// uns.trusted_proxies: whether 10.9.8.7 is one (the value the mapping test gives).
std::string text(const std::shared_ptr<const net::AddressRanges>& v) {
  return v && v->contains("10.9.8.7") ? "10.9.8.7 trusted" : "none";
}
std::string text(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += s + ",";
  return out;
}

// Shorthand: a row of struct S built by `make`, showing `field`.
#define LCC_ROW(key, S, make, field) \
  Row { key, #S "." #field, [](const Config& c) { return text(make(c).field); } }

http::ServerOptions httpServer(const Config& c) { return http::ServerOptions::fromConfig(c); }
http::AdminOptions httpAdmin(const Config& c) { return http::AdminOptions::fromConfig(c); }

std::vector<Row> httpRows() {
  return {
      LCC_ROW("listen.http", ServerOptions, httpServer, listen),
      LCC_ROW("http.max_body", ServerOptions, httpServer, max_body),
      LCC_ROW("http.idle_timeout", ServerOptions, httpServer, idle_timeout),
      LCC_ROW("http.workers", ServerOptions, httpServer, workers),
      LCC_ROW("http.max_connections", ServerOptions, httpServer, max_connections),
      LCC_ROW("http.stream_workers", ServerOptions, httpServer, stream_workers),
      LCC_ROW("http.stream_buffer", ServerOptions, httpServer, stream_buffer),
      LCC_ROW("http.max_header", ServerOptions, httpServer, max_header),
      LCC_ROW("http.header_timeout", ServerOptions, httpServer, header_timeout),
      LCC_ROW("http.max_connections_per_ip", ServerOptions, httpServer, max_connections_per_ip),
      LCC_ROW("http.max_handlers_per_ip", ServerOptions, httpServer, max_handlers_per_ip),
      LCC_ROW("http.max_streams_per_ip", ServerOptions, httpServer, max_streams_per_ip),
      LCC_ROW("http.write_timeout", ServerOptions, httpServer, write_timeout),
      LCC_ROW("http.admin_remote", AdminOptions, httpAdmin, admin_remote),
      LCC_ROW("rs.default_priority", AdminOptions, httpAdmin, provider_defaults.default_priority),
      LCC_ROW("rs.default_bandwidth", AdminOptions, httpAdmin, provider_defaults.default_bandwidth),
      LCC_ROW("rs.default_quota_files", AdminOptions, httpAdmin, provider_defaults.default_quota_files),
      LCC_ROW("rs.default_quota_bytes", AdminOptions, httpAdmin, provider_defaults.default_quota_bytes),
      LCC_ROW("sitemap.min_interval", AdminOptions, httpAdmin, sitemap_min_interval),
      LCC_ROW("roles", AdminOptions, httpAdmin, qm_reads_providers),
  };
}

cu::CuServerOptions cuServer(const Config& c) { return cu::CuServerOptions::fromConfig(c); }
cu::EngineOptions cuEngine(const Config& c) { return cu::EngineOptions::fromConfig(c, "/data", "m1"); }
cu::RemoteOptions cuRemote(const Config& c) { return cu::RemoteOptions::fromConfig(c); }
cu::PeerOptions cuPeers(const Config& c) { return cu::PeerOptions::fromConfig(c); }
resourcesync::Options rsync(const Config& c) { return resourcesync::Options::fromConfig(c); }

std::vector<Row> cuRows() {
  return {
      LCC_ROW("listen.cu", CuServerOptions, cuServer, listen),
      LCC_ROW("listen.cu_tls", CuServerOptions, cuServer, listen_tls),
      LCC_ROW("tls.handshake_timeout", CuServerOptions, cuServer, handshake_timeout),
      LCC_ROW("cu.max_connections", CuServerOptions, cuServer, max_connections),
      LCC_ROW("cu.max_connections_per_ip", CuServerOptions, cuServer, max_connections_per_ip),
      LCC_ROW("cu.max_exports_per_ip", CuServerOptions, cuServer, max_exports_per_ip),
      LCC_ROW("cu.idle_timeout", CuServerOptions, cuServer, idle_timeout),
      LCC_ROW("cu.max_query_bytes", CuServerOptions, cuServer, max_query_bytes),
      LCC_ROW("cu.write_timeout", CuServerOptions, cuServer, write_timeout),
      LCC_ROW("cu.pipe_buffer", CuServerOptions, cuServer, pipe_buffer),
      LCC_ROW("cu.export_threads", CuServerOptions, cuServer, export_threads),
      LCC_ROW("botm.content_dir", EngineOptions, cuEngine, content_dir),
      LCC_ROW("cu.temp_dir", EngineOptions, cuEngine, temp_dir),
      LCC_ROW("cu.default_limit", EngineOptions, cuEngine, default_limit),
      LCC_ROW("cu.url_order_formats", EngineOptions, cuEngine, url_order_formats),
      LCC_ROW("cu.url_order_scan_factor", EngineOptions, cuEngine, url_order_scan_factor),
      LCC_ROW("cu.remote_connect_timeout", EngineOptions, cuEngine, remote.remote_connect_timeout),
      LCC_ROW("cu.remote_read_timeout", RemoteOptions, cuRemote, remote_read_timeout),
      LCC_ROW("cu.remote_pipeline", RemoteOptions, cuRemote, remote_pipeline),
      LCC_ROW("cu.peers", PeerOptions, cuPeers, peers),
      LCC_ROW("cu.peer_timeout", PeerOptions, cuPeers, timeout_ms),
      LCC_ROW("cu.peer_max_answer_bytes", PeerOptions, cuPeers, max_answer_bytes),
      LCC_ROW("cu.peer_max_records", PeerOptions, cuPeers, max_records),
      LCC_ROW("resourcesync.base_url", resourcesync::Options, rsync, base_url),
      LCC_ROW("listen.http", resourcesync::Options, rsync, base_url),
      LCC_ROW("resourcesync.page_size", resourcesync::Options, rsync, page_size),
  };
}

rs::RsOptions rsOpts(const Config& c) { return rs::RsOptions::fromConfig(c); }
mail::MailerOptions mailer(const Config& c) { return mail::MailerOptions::fromConfig(c); }
mail::NotifierOptions notifier(const Config& c) { return mail::NotifierOptions::fromConfig(c); }

std::vector<Row> rsRows() {
  return {
      LCC_ROW("rs.secret_ttl", RsOptions, rsOpts, secret_ttl),
      LCC_ROW("rs.secret_file", RsOptions, rsOpts, secret_file),
      LCC_ROW("rs.default_priority", RsOptions, rsOpts, provider_defaults.default_priority),
      LCC_ROW("rs.default_bandwidth", RsOptions, rsOpts, provider_defaults.default_bandwidth),
      LCC_ROW("rs.default_quota_files", RsOptions, rsOpts, provider_defaults.default_quota_files),
      LCC_ROW("rs.default_quota_bytes", RsOptions, rsOpts, provider_defaults.default_quota_bytes),
      LCC_ROW("rs.verify_timeout", RsOptions, rsOpts, verify_timeout),
      LCC_ROW("rs.secret_max_size", RsOptions, rsOpts, secret_max_size),
      LCC_ROW("rs.sweep_interval", RsOptions, rsOpts, sweep_interval),
      LCC_ROW("rs.max_pending", RsOptions, rsOpts, max_pending),
      LCC_ROW("rs.max_pending_per_ip", RsOptions, rsOpts, max_pending_per_ip),
      LCC_ROW("rs.max_pending_per_host", RsOptions, rsOpts, max_pending_per_host),
      LCC_ROW("rs.register_per_minute", RsOptions, rsOpts, register_per_minute),
      LCC_ROW("rs.register_tracked_addresses", RsOptions, rsOpts, register_tracked_addresses),
      LCC_ROW("rs.reverify_interval", RsOptions, rsOpts, reverify_interval),
      LCC_ROW("rs.reverify_failures", RsOptions, rsOpts, reverify_failures),
      LCC_ROW("rs.reverify_grace", RsOptions, rsOpts, reverify_grace),
      LCC_ROW("mail.relay", MailerOptions, mailer, relay),
      LCC_ROW("mail.from", MailerOptions, mailer, from),
      LCC_ROW("mail.timeout", MailerOptions, mailer, timeout),
      LCC_ROW("mail.retries", MailerOptions, mailer, retries),
      LCC_ROW("mail.retry_delay", MailerOptions, mailer, retry_delay),
      LCC_ROW("mail.queue_size", MailerOptions, mailer, queue_size),
      LCC_ROW("mail.check_interval", NotifierOptions, notifier, check_interval),
      LCC_ROW("mail.min_interval", NotifierOptions, notifier, policy.min_interval),
      LCC_ROW("mail.quota_warn_percent", NotifierOptions, notifier, policy.quota_warn_percent),
  };
}

indexnow::ReceiverOptions receiver(const Config& c) { return indexnow::ReceiverOptions::fromConfig(c); }
sitemap::SitemapPollOptions poll(const Config& c) { return sitemap::SitemapPollOptions::fromConfig(c, "/data"); }

std::vector<Row> indexnowSitemapRows() {
  return {
      LCC_ROW("indexnow.key_ttl", ReceiverOptions, receiver, key_ttl),
      LCC_ROW("indexnow.key_timeout", ReceiverOptions, receiver, key_timeout),
      LCC_ROW("indexnow.register", ReceiverOptions, receiver, auto_register),
      LCC_ROW("indexnow.requests_per_minute", ReceiverOptions, receiver, requests_per_minute),
      LCC_ROW("indexnow.max_listed_refusals", ReceiverOptions, receiver, max_listed_refusals),
      LCC_ROW("rs.default_priority", ReceiverOptions, receiver, provider_defaults.default_priority),
      LCC_ROW("rs.default_bandwidth", ReceiverOptions, receiver, provider_defaults.default_bandwidth),
      LCC_ROW("rs.default_quota_files", ReceiverOptions, receiver, provider_defaults.default_quota_files),
      LCC_ROW("rs.default_quota_bytes", ReceiverOptions, receiver, provider_defaults.default_quota_bytes),
      LCC_ROW("accept_mime", ReceiverOptions, receiver, accept_mime),
      LCC_ROW("uns.max_url_length", ReceiverOptions, receiver, max_url_length),
      LCC_ROW("sitemap.default_interval", SitemapPollOptions, poll, default_interval),
      LCC_ROW("sitemap.check_interval", SitemapPollOptions, poll, check_interval),
      LCC_ROW("sitemap.retry_min", SitemapPollOptions, poll, retry_min),
      LCC_ROW("sitemap.fetch_timeout", SitemapPollOptions, poll, fetch_timeout),
      LCC_ROW("sitemap.max_pages", SitemapPollOptions, poll, max_pages),
      LCC_ROW("uns.max_set_urls", SitemapPollOptions, poll, max_set_urls),
      LCC_ROW("accept_mime", SitemapPollOptions, poll, accept_mime),
      LCC_ROW("uns.max_url_length", SitemapPollOptions, poll, max_url_length),
      LCC_ROW("qm.max_errors_kept", SitemapPollOptions, poll, max_errors_kept),
  };
}

uns::UnsOptions unsOpts(const Config& c) { return uns::UnsOptions::fromConfig(c, "/data", "m1"); }

std::vector<Row> unsRows() {
  return {
      LCC_ROW("listen.uns", UnsOptions, unsOpts, listen),
      LCC_ROW("listen.uns_tls", UnsOptions, unsOpts, listen_tls),
      LCC_ROW("tls.handshake_timeout", UnsOptions, unsOpts, handshake_timeout),
      LCC_ROW("uns.idle_timeout", UnsOptions, unsOpts, idle_timeout),
      LCC_ROW("uns.session_timeout", UnsOptions, unsOpts, session_timeout),
      LCC_ROW("uns.max_attribute_length", UnsOptions, unsOpts, session.xml.max_value_length),
      LCC_ROW("uns.max_depth", UnsOptions, unsOpts, session.xml.max_depth),
      LCC_ROW("uns.max_set_urls", UnsOptions, unsOpts, session.max_set_urls),
      LCC_ROW("uns.max_url_length", UnsOptions, unsOpts, session.max_url_length),
      LCC_ROW("qm.slots", UnsOptions, unsOpts, session.slots),
      LCC_ROW("accept_mime", UnsOptions, unsOpts, session.accept_mime),
      LCC_ROW("accept_mime", UnsOptions, unsOpts, core.accept_mime),
      LCC_ROW("uns.max_connections", UnsOptions, unsOpts, core.max_connections),
      LCC_ROW("uns.max_connections_per_ip", UnsOptions, unsOpts, core.max_connections_per_ip),
      LCC_ROW("uns.max_connections_per_provider", UnsOptions, unsOpts, core.max_connections_per_provider),
      LCC_ROW("uns.report_errors", UnsOptions, unsOpts, core.report_errors),
      LCC_ROW("uns.fullsets_per_period", UnsOptions, unsOpts, core.fullsets_per_period),
      LCC_ROW("uns.fullset_period", UnsOptions, unsOpts, core.fullset_period),
      LCC_ROW("uns.auth_cache_entries", UnsOptions, unsOpts, core.auth_cache_entries),
      LCC_ROW("uns.auth_failures_per_minute", UnsOptions, unsOpts, core.auth_failures_per_minute),
      LCC_ROW("uns.auth_cooldown", UnsOptions, unsOpts, core.auth_cooldown),
      LCC_ROW("uns.auth_tracked_addresses", UnsOptions, unsOpts, core.auth_tracked_addresses),
      LCC_ROW("uns.qm", UnsOptions, unsOpts, forwarder.qm_address),
      LCC_ROW("listen.qm", UnsOptions, unsOpts, forwarder.qm_address),
      LCC_ROW("uns.qm_retry", UnsOptions, unsOpts, forwarder.qm_retry),
      LCC_ROW("uns.qm_ack_timeout", UnsOptions, unsOpts, forwarder.qm_ack_timeout),
      LCC_ROW("uns.spool", UnsOptions, unsOpts, forwarder.spool),
      LCC_ROW("uns.spool_limit", UnsOptions, unsOpts, forwarder.spool_limit),
      LCC_ROW("uns.trusted_proxies", UnsOptions, unsOpts, trusted_proxies),
      LCC_ROW("uns.max_attribute_length", UnsOptions, unsOpts, forwarder.max_attribute_length),
  };
}

qm::BotmServerOptions botmServer(const Config& c) { return qm::BotmServerOptions::fromConfig(c); }
qm::IntakeServerOptions intake(const Config& c) { return qm::IntakeServerOptions::fromConfig(c); }
bot::RobotOptions robot(const Config& c) { return bot::RobotOptions::fromConfig(c); }

std::vector<Row> linkRows() {
  return {
      LCC_ROW("listen.botm", BotmServerOptions, botmServer, listen),
      LCC_ROW("uns.max_attribute_length", BotmServerOptions, botmServer, max_attribute_length),
      LCC_ROW("listen.qm", IntakeServerOptions, intake, listen),
      LCC_ROW("uns.max_attribute_length", IntakeServerOptions, intake, max_attribute_length),
      LCC_ROW("bot.slots", RobotOptions, robot, slots),
      LCC_ROW("bot.sync_files", RobotOptions, robot, sync_files),
      LCC_ROW("bot.max_response_head", RobotOptions, robot, max_response_head),
  };
}

#undef LCC_ROW

std::vector<Row> allRows() {
  std::vector<Row> rows;
  for (auto part : {httpRows(), cuRows(), rsRows(), indexnowSitemapRows(), unsRows(), linkRows()}) {
    rows.insert(rows.end(), part.begin(), part.end());
  }
  return rows;
}

// Keys of the components above that no options struct maps, and who reads them.
const std::map<std::string, std::string> kReadElsewhere = {
    {"http.status_providers", "registerNodeRoutes (StatusPageSources::status_providers)"},
    {"listen.https", "the daemon: the HTTPS copy of ServerOptions"},
    {"listen.robots", "the BOT-M's Settings (botm_service.cc) and the bot role's target"},
    {"cu.content_urls", "the daemon (parseContentUrls, cu_mirror)"},
    {"uns.password_hash_ops", "the daemon (PasswordHasher)"},
    {"bot.robots", "makeBotService"},
    {"bot.connect", "makeBotService"},
    {"bot.sweep_temp_files", "makeBotService"},
};

const KeySpec& specOf(const std::string& key) {
  for (const auto& s : Config::schema()) {
    if (key == s.path) return s;
  }
  throw std::runtime_error("no such key " + key);
}

// A value of `key` other than its default, within the schema's bounds, as --set takes it.
std::string otherValue(const KeySpec& spec, const Config& defaults) {
  const std::string key = spec.path;
  switch (spec.type) {
    case KeyType::kBool: return defaults.getBool(key) ? "false" : "true";
    case KeyType::kInt:
    case KeyType::kDuration:
    case KeyType::kSize: {
      const std::int64_t d = defaults.getInt(key);
      for (std::int64_t v : {d * 2, d + 1000, d + 1, d - 1}) {
        if (v == d || (spec.min <= spec.max && (v < spec.min || v > spec.max))) continue;
        return std::to_string(v) + (spec.type == KeyType::kDuration ? "ms" : "");
      }
      throw std::runtime_error("no other value for " + key);
    }
    case KeyType::kEnum: {
      for (const auto& choice : enumChoices(spec)) {
        if (choice != defaults.getString(key)) return choice;
      }
      throw std::runtime_error("no other choice for " + key);
    }
    case KeyType::kHostPort: return "127.0.0.1:9";
    case KeyType::kStringList: return "[opts-test]";
    case KeyType::kString: return "opts-test";
    default: throw std::runtime_error("no other value for " + key);
  }
}

TEST(OptionsFromConfig, EveryMappedKeyReachesItsMember) {
  const Config defaults = Config::defaults();
  for (const Row& row : allRows()) {
    SCOPED_TRACE(row.key + " -> " + row.member);
    // Two lists whose entries are checked: a value of the right shape.
    const std::string value = row.key == "roles"      ? "[uns]"
                              : row.key == "cu.peers" ? "[http://127.0.0.1:9]"
                              : row.key == "uns.trusted_proxies" ? "[10.9.8.0/24]"
                                                      : otherValue(specOf(row.key), defaults);
    std::vector<ConfigProblem> problems;
    auto changed = Config::loadText("", "t.yaml", {row.key + "=" + value}, &problems);
    ASSERT_TRUE(changed.isOk()) << (problems.empty() ? changed.status().toString() : problems[0].toString());
    EXPECT_NE(row.read(changed.value()), row.read(defaults)) << row.key << "=" << value << " left it unchanged";
  }
}

TEST(OptionsFromConfig, EveryKeyOfTheseComponentsIsMappedOrNamedAsReadElsewhere) {
  std::set<std::string> mapped;
  for (const Row& row : allRows()) mapped.insert(row.key);
  const std::vector<std::string> prefixes = {"listen.", "http.",      "cu.",   "resourcesync.", "rs.",
                                             "mail.",   "indexnow.", "sitemap.", "uns.",         "bot."};
  for (const auto& spec : Config::schema()) {
    const std::string key = spec.path;
    const bool covered = std::any_of(prefixes.begin(), prefixes.end(),
                                     [&](const std::string& p) { return key.rfind(p, 0) == 0; });
    if (!covered) continue;
    EXPECT_TRUE(mapped.count(key) != 0 || kReadElsewhere.count(key) != 0)
        << key << ": no options struct maps it; map it in a fromConfig() or name its reader in kReadElsewhere";
    EXPECT_FALSE(mapped.count(key) != 0 && kReadElsewhere.count(key) != 0) << key << " is listed twice";
  }
}

// The schema's defaults are what a struct built from Config::defaults() holds (a few
// that once had a literal default of their own, differing from the schema's).
TEST(OptionsFromConfig, DefaultsAreTheSchemas) {
  const Config d = Config::defaults();
  EXPECT_EQ(http::ServerOptions::fromConfig(d).max_body, 4u << 20);
  EXPECT_EQ(cu::CuServerOptions::fromConfig(d).write_timeout, Millis(60 * 1000));
  EXPECT_EQ(mail::MailerOptions::fromConfig(d).retry_delay, Millis(5 * 60 * 1000));
  EXPECT_EQ(rs::RsOptions::fromConfig(d).provider_defaults.default_quota_files, 100000u);
  EXPECT_EQ(indexnow::ReceiverOptions::fromConfig(d).provider_defaults.default_quota_bytes, 1ull << 30);
  EXPECT_EQ(uns::UnsOptions::fromConfig(d, "/data", "m1").listen, "127.0.0.1:7700");
}

}  // namespace
}  // namespace lcc
