#include "stub_plugin.h"

#include <fstream>
#include <sstream>

#include "stub_fetcher.h"

namespace lcc::plugins::stub {
namespace {

const OptionSpec kOptions[] = {
    {"script", OptionType::kString, "", 0, 4096,
     "script file: lines \"URL-or-prefix directive=value ...\" (empty: none)"},
    {"default_size", OptionType::kSize, "1KiB", 0, 64LL * 1024 * 1024 * 1024, "body size when no stub_size is given"},
    {"default_mime", OptionType::kString, "text/html", 1, 255,
     "Content-Type when neither stub_mime nor the request's expected MIME type says"},
    {"max_size", OptionType::kSize, "50MiB", 1, 64LL * 1024 * 1024 * 1024,
     "largest body when the request sets no max_size (308 above it)"},
    {"delay", OptionType::kDuration, "0ms", 0, 7LL * 24 * 3600 * 1000,
     "delay of every fetch on the host clock when no stub_delay is given"},
    {"verify_md5", OptionType::kBool, "false", 1, 0, "compare the body's MD5 with the request's expected_md5 (309)"},
};

Result<Fetcher*> makeFetcher(const HostContext& host, const OptionsView& o) {
  LCC_PLUGIN_GUARD({
    StubOptions opts;
    opts.script = o.getString("script", "");
    opts.default_size = static_cast<std::uint64_t>(o.getInt("default_size", 1024));
    opts.default_mime = o.getString("default_mime", "text/html");
    opts.max_size = static_cast<std::uint64_t>(o.getInt("max_size", 50LL * 1024 * 1024));
    opts.delay = Millis(o.getInt("delay", 0));
    opts.verify_md5 = o.getBool("verify_md5", false);
    Script script;
    if (!opts.script.empty()) {
      std::ifstream in(opts.script);
      if (!in) return Status::invalidArgument("fetch-stub: cannot read the script file " + opts.script);
      std::stringstream ss;
      ss << in.rdbuf();
      auto parsed = Script::parse(ss.str(), opts.script);
      if (!parsed.isOk()) return parsed.status();
      script = std::move(parsed).value();
    }
    return static_cast<Fetcher*>(new StubFetcher(host, std::move(opts), std::move(script)));
  })
}

}  // namespace

const PluginDescriptor* describe() {
  static const PluginDescriptor kDescriptor = {
      LCC_PLUGIN_VERSION_FIELDS,
      .name = "fetch-stub",
      .version = "1.0",
      .provides = kProvidesFetcher,
      .options = kOptions,
      .option_count = sizeof(kOptions) / sizeof(kOptions[0]),
      .make_fetcher = &makeFetcher,
  };
  return &kDescriptor;
}

}  // namespace lcc::plugins::stub
