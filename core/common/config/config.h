// config.h — etc/lcc.yaml into an immutable, validated Config (docs/configuration.md).
//
// Every key of the core is declared once in schema.cc (path, type, default, bounds,
// help). Loading collects every problem — unknown keys, wrong types, values out of
// bounds — as `FILE: key.path: why (got X)` instead of stopping at the first.
// Plugin options are checked later, against the plugin's own OptionSpec table, by
// pluginOptions(), once the plugin is loaded.
// THREADS: a loaded Config is immutable and may be read from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lcc/options.h"
#include "lcc/status.h"

namespace lcc {

enum class KeyType : std::uint8_t {
  kBool, kInt, kString, kDuration, kSize, kStringList,
  kHostPort,    // "host:port"
  kPlugin,      // a plugin name, or {plugin: NAME, options: {...}}
  kPluginList,  // a list of kPlugin entries
  kEnum,        // one of KeySpec::choices
};

struct KeySpec {
  const char* path;  // "uns.max_connections"
  KeyType type;
  const char* default_value;  // YAML scalar spelling; lists comma-separated
  std::int64_t min;           // for kInt/kDuration/kSize (ignored when min > max)
  std::int64_t max;
  const char* help;
  const char* choices = nullptr;  // kEnum: the allowed values, comma-separated ("off,auto")
};

// A kEnum key's allowed values, in the schema's order.
std::vector<std::string> enumChoices(const KeySpec& spec);

// A problem found while loading: printed as "file: key: why".
struct ConfigProblem {
  std::string file;
  std::string key;
  std::string why;
  std::string toString() const;
};

struct PluginRef {
  std::string key;     // where it was named: "storage.queue", "exporters[1]"
  std::string plugin;  // plugin name (file stem)
};

class Config {
 public:
  // The core schema (schema.cc).
  static const std::vector<KeySpec>& schema();

  // Loads `file` with `overrides` ("a.b=value", as --set). On problems returns
  // InvalidArgument and fills `problems`; a YAML syntax error is one problem.
  static Result<Config> load(const std::string& file, const std::vector<std::string>& overrides,
                             std::vector<ConfigProblem>* problems);
  // Same from YAML text (tests); `file` is only used in messages.
  static Result<Config> loadText(const std::string& yaml, const std::string& file,
                                 const std::vector<std::string>& overrides, std::vector<ConfigProblem>* problems);

  // Every key at its schema default, as from an empty file; file() is empty. Tests and
  // benchmarks build options structs from it (QmOptions::fromConfig(Config::defaults())),
  // so that a default lives only in schema.cc.
  static Config defaults();

  Config(const Config&);
  Config& operator=(const Config&);
  Config(Config&&) noexcept;
  Config& operator=(Config&&) noexcept;
  ~Config();

  const std::string& file() const;
  // Where the value at `path` was given, for a problem line: "--set" when a --set
  // gave it (or a value or section holding it), else file().
  std::string sourceOf(const std::string& path) const;

  // Typed access to schema keys. Asking for a key that is not in the schema, or with
  // the wrong type, is a programming error (aborts with a message).
  bool getBool(const std::string& path) const;
  std::int64_t getInt(const std::string& path) const;       // kInt, kDuration (ms), kSize (bytes)
  std::string getString(const std::string& path) const;     // kString, kHostPort
  std::vector<std::string> getList(const std::string& path) const;
  PluginRef getPlugin(const std::string& path) const;
  std::vector<PluginRef> getPluginList(const std::string& path) const;
  bool isSet(const std::string& path) const;  // given in the file or by --set

  // Validates the `options:` of a plugin entry against the plugin's table.
  Result<OptionsView> pluginOptions(const PluginRef& ref, const OptionSpec* specs, std::size_t count,
                                    std::vector<ConfigProblem>* problems) const;

  // Paths relative to the config file's folder... no: relative paths are relative to
  // the working directory, as in docs/configuration.md (`./var`). This resolves them to absolute.
  static std::string absolutePath(const std::string& path);

  // Every key with its effective value, one per line (lccd --print-config).
  std::string dump() const;
  // The schema with defaults and help (lccd --print-defaults).
  static std::string describeDefaults();

 private:
  struct Impl;
  explicit Config(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace lcc
