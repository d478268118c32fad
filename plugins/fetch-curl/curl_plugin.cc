#include "curl_plugin.h"

#include <curl/curl.h>

#include "curl_fetcher.h"

namespace lcc::plugins::curl {
namespace {

constexpr std::int64_t kDay = 24LL * 3600 * 1000;
constexpr std::int64_t kGiB = 1024LL * 1024 * 1024;

const OptionSpec kOptions[] = {
    {"allow_private", OptionType::kBool, "false", 1, 0,
     "allow loopback, private, link-local and other non-public addresses (311 otherwise)"},
    {"allow_peers", OptionType::kStringList, "", 0, 0,
     "ADDRESS:PORT peers reached whatever their address, e.g. the HTTP port of the other LCCs behind one front "
     "end (a slot move's copies read them)"},
    {"timeout", OptionType::kDuration, "5m", 100, kDay, "longest whole transfer (304)"},
    {"connect_timeout", OptionType::kDuration, "30s", 10, kDay, "longest connection set-up (304)"},
    {"max_size", OptionType::kSize, "50MiB", 1, 64 * kGiB, "largest body when the request sets none (308)"},
    {"max_redirects", OptionType::kInt, "5", 0, 50, "redirects followed before 310"},
    {"user_agent", OptionType::kString, "lcc-robot/0.1 (Local Content Cache robot; +https://www.lococa.org/)", 1,
     512, "User-Agent header"},
    {"max_connections", OptionType::kInt, "256", 1, 100000, "open connections at most (kept for reuse)"},
    {"io_threads", OptionType::kInt, "1", 1, 64, "threads writing files and computing MD5"},
    {"verify_md5", OptionType::kBool, "false", 1, 0, "compare the body's MD5 with the declared one (309)"},
};

Status init(const HostContext& host) {
  CURLcode c = curl_global_init(CURL_GLOBAL_DEFAULT);
  if (c != CURLE_OK) return Status::internal(std::string("curl_global_init: ") + curl_easy_strerror(c));
  const curl_version_info_data* v = curl_version_info(CURLVERSION_NOW);
  if (v->version_num < 0x075500) {  // 7.85.0: CURLOPT_PROTOCOLS_STR
    return Status::notSupported(std::string("fetch-curl needs libcurl >= 7.85.0, found ") + v->version);
  }
  return Status::ok();
}

Result<Fetcher*> makeFetcher(const HostContext& host, const OptionsView& o) {
  LCC_PLUGIN_GUARD({
    CurlOptions c;
    c.allow_private = o.getBool("allow_private", false);
    c.timeout = Millis(o.getInt("timeout", 300000));
    c.connect_timeout = Millis(o.getInt("connect_timeout", 30000));
    c.max_size = static_cast<std::uint64_t>(o.getInt("max_size", 50LL << 20));
    c.max_redirects = static_cast<long>(o.getInt("max_redirects", 5));
    c.user_agent = o.getString("user_agent", c.user_agent);
    c.max_connections = static_cast<long>(o.getInt("max_connections", 256));
    c.io_threads = static_cast<int>(o.getInt("io_threads", 1));
    c.verify_md5 = o.getBool("verify_md5", false);
    if (std::string why; !c.allow_peers.parse(o.getList("allow_peers"), &why)) {
      return Status::invalidArgument("fetch-curl: allow_peers: " + why);
    }
    if (host.logger && c.allow_private) {
      host.logger->info("fetch-curl: allow_private is on: loopback and private addresses may be fetched");
    }
    return static_cast<Fetcher*>(new CurlFetcher(host, std::move(c)));
  })
}

}  // namespace

const PluginDescriptor* describe() {
  static const PluginDescriptor kDescriptor = {
      LCC_PLUGIN_VERSION_FIELDS,
      .name = "fetch-curl",
      .version = "1.0",
      .provides = kProvidesFetcher,
      .options = kOptions,
      .option_count = sizeof(kOptions) / sizeof(kOptions[0]),
      .init = &init,
      .make_fetcher = &makeFetcher,
  };
  return &kDescriptor;
}

}  // namespace lcc::plugins::curl
