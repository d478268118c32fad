// lcc/options.h — declarative option schemas and validated option values.
//
// A plugin declares its options as a table of OptionSpec in its descriptor; the core
// reads the YAML node under the plugin's entry (`options:`), checks it against the
// table (unknown keys, types, bounds: every problem reported as `file: key.path: why`)
// and hands the plugin an OptionsView with every key present (defaults filled in).
// No YAML type crosses into a plugin.
// THREADS: OptionsView is an immutable value.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace lcc {

enum class OptionType : std::uint8_t {
  kBool,        // true/false
  kInt,         // integer within [min, max]
  kString,      // any string (min/max bound its length when max > 0)
  kDuration,    // "250ms", "30s", "5m", "2h", "1d" or a bare integer of ms; value in ms
  kSize,        // "512", "64KiB", "50MiB", "2GiB" (also KB/MB/GB as powers of 1000); value in bytes
  kStringList,  // a YAML sequence of strings
};

struct OptionSpec {
  const char* name;           // key under `options:`
  OptionType type;
  const char* default_value;  // in YAML scalar spelling; for lists, comma-separated
  std::int64_t min;           // for kInt/kDuration/kSize; ignored when min > max
  std::int64_t max;
  const char* help;           // one line for --print-defaults and docs
};

using OptionValue = std::variant<bool, std::int64_t, std::string, std::vector<std::string>>;

class OptionsView {
 public:
  OptionsView() = default;
  explicit OptionsView(std::map<std::string, OptionValue, std::less<>> values) : values_(std::move(values)) {}

  bool has(std::string_view key) const { return values_.find(key) != values_.end(); }
  // Accessors for keys the plugin declared; a missing key or a wrong type returns `fallback`.
  bool getBool(std::string_view key, bool fallback = false) const { return get<bool>(key, fallback); }
  std::int64_t getInt(std::string_view key, std::int64_t fallback = 0) const { return get<std::int64_t>(key, fallback); }
  std::string getString(std::string_view key, std::string fallback = {}) const { return get<std::string>(key, std::move(fallback)); }
  std::vector<std::string> getList(std::string_view key) const { return get<std::vector<std::string>>(key, {}); }
  const std::map<std::string, OptionValue, std::less<>>& all() const { return values_; }

 private:
  template <typename T>
  T get(std::string_view key, T fallback) const {
    auto it = values_.find(key);
    if (it == values_.end()) return fallback;
    if (const T* v = std::get_if<T>(&it->second)) return *v;
    return fallback;
  }

  std::map<std::string, OptionValue, std::less<>> values_;
};

}  // namespace lcc
