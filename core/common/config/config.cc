#include "config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <sstream>

#include "common/config/suggest.h"
#include "lcc/support/time_util.h"
#include "net/host_port.h"

namespace lcc {

std::string ConfigProblem::toString() const {
  std::string s = file;
  if (!key.empty()) s += ": " + key;
  s += ": " + why;
  return s;
}

namespace {

std::string scalarText(const YAML::Node& n) {
  if (n.IsScalar()) return n.Scalar();
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a map";
  return "nothing";
}

// A map key as text. YAML allows a list or a map as a key ("? [1]: x"), which no key of
// the schema or of a plugin's table can be: nullopt, and the caller reports it
// (as<std::string>() would throw YAML::TypedBadConversion, found by config_fuzz).
std::optional<std::string> keyText(const YAML::Node& k) {
  if (k.IsScalar()) return k.Scalar();
  if (k.IsNull()) return std::string("null");
  return std::nullopt;
}

std::string notAKey(const YAML::Node& k) { return "a key must be a name (got " + scalarText(k) + " as a key)"; }

std::vector<std::string> splitComma(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else if (c != ' ') {
      cur.push_back(c);
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

std::string boundsText(std::int64_t min, std::int64_t max) {
  return "[" + std::to_string(min) + ", " + std::to_string(max) + "]";
}

// "a, b or c": the allowed values of an enum key, as an error message names them.
std::string choicesText(const std::vector<std::string>& choices) {
  std::string out;
  for (std::size_t i = 0; i < choices.size(); ++i) {
    if (i > 0) out += i + 1 == choices.size() ? " or " : ", ";
    out += choices[i];
  }
  return out;
}

// Empty when `v` is a good host:port (net::HostPort), else why not.
// A listen address: "" (the listener is off), host:port, or tls://host:port (a link
// listener that runs TLS; which keys may carry it is checked with the tls.* keys).
std::string hostPortProblem(const std::string& v) {
  if (v.empty()) return {};
  auto hp = net::HostPort::parse(net::splitLinkAddress(v).host_port);
  if (hp.isOk()) return {};
  const std::string& m = hp.status().message();
  auto sep = m.rfind(": ");
  return sep == std::string::npos ? m : m.substr(sep + 2);
}

// Parses one value of `type` from node `n`; on failure returns the reason.
// `text_default` is used when `n` is not defined.
struct Parsed {
  OptionValue value;
  std::string error;  // empty when OK
};

Parsed parseValue(KeyType type, const YAML::Node* n, const char* text_default, std::int64_t min, std::int64_t max,
                  const char* choices = nullptr) {
  Parsed p;
  std::string text;
  bool from_node = n != nullptr && n->IsDefined() && !n->IsNull();
  if (type == KeyType::kStringList) {
    std::vector<std::string> list;
    if (!from_node) {
      list = splitComma(text_default ? text_default : "");
    } else if (n->IsSequence()) {
      for (const auto& item : *n) {
        if (!item.IsScalar()) {
          p.error = "must be a list of strings (got " + scalarText(item) + " in the list)";
          return p;
        }
        list.push_back(item.Scalar());
      }
    } else {
      p.error = "must be a list (got " + scalarText(*n) + ")";
      return p;
    }
    p.value = std::move(list);
    return p;
  }
  if (from_node) {
    if (!n->IsScalar()) {
      p.error = "must be a single value (got " + scalarText(*n) + ")";
      return p;
    }
    text = n->Scalar();
  } else {
    text = text_default ? text_default : "";
  }
  switch (type) {
    case KeyType::kBool:
      if (text == "true" || text == "yes" || text == "on") {
        p.value = true;
      } else if (text == "false" || text == "no" || text == "off") {
        p.value = false;
      } else {
        p.error = "must be true or false (got " + text + ")";
      }
      return p;
    case KeyType::kInt:
    case KeyType::kDuration:
    case KeyType::kSize: {
      std::optional<std::int64_t> v;
      if (type == KeyType::kDuration) {
        v = parseDurationMs(text);
        if (!v) p.error = "must be a duration like 500ms, 30s, 5m, 2h, 1d (got " + text + ")";
      } else if (type == KeyType::kSize) {
        v = parseSizeBytes(text);
        if (!v) p.error = "must be a size like 4096, 64KiB, 50MiB, 2GiB (got " + text + ")";
      } else {
        char* end = nullptr;
        errno = 0;
        long long x = std::strtoll(text.c_str(), &end, 10);
        if (text.empty() || *end != '\0' || errno == ERANGE) {
          p.error = "must be an integer (got " + text + ")";
        } else {
          v = x;
        }
      }
      if (!v) return p;
      if (min <= max && (*v < min || *v > max)) {
        p.error = "must be in " + boundsText(min, max) + " (got " + text + ")";
        return p;
      }
      p.value = *v;
      return p;
    }
    case KeyType::kString:
      if (min <= max && max > 0 && (static_cast<std::int64_t>(text.size()) < min ||
                                    static_cast<std::int64_t>(text.size()) > max)) {
        p.error = "length must be in " + boundsText(min, max) + " (got " + std::to_string(text.size()) + ")";
        return p;
      }
      p.value = text;
      return p;
    case KeyType::kEnum: {
      const std::vector<std::string> allowed = splitComma(choices ? choices : "");
      if (std::find(allowed.begin(), allowed.end(), text) == allowed.end()) {
        p.error = "must be " + choicesText(allowed) + " (got " + text + ")";
        return p;
      }
      p.value = text;
      return p;
    }
    case KeyType::kHostPort:
      if (std::string why = hostPortProblem(text); !why.empty()) {
        p.error = "must be host:port with a port up to 65535: " + why + " (got " + text + ")";
        return p;
      }
      p.value = text;
      return p;
    default:
      p.error = "internal: unexpected key type";
      return p;
  }
}

KeyType fromOptionType(OptionType t) {
  switch (t) {
    case OptionType::kBool: return KeyType::kBool;
    case OptionType::kInt: return KeyType::kInt;
    case OptionType::kString: return KeyType::kString;
    case OptionType::kDuration: return KeyType::kDuration;
    case OptionType::kSize: return KeyType::kSize;
    case OptionType::kStringList: return KeyType::kStringList;
  }
  return KeyType::kString;
}

// Sets `path` (dotted) in `root` to the YAML parsed from `value`.
bool applyOverride(YAML::Node& root, const std::string& path, const std::string& value, std::string* why) {
  YAML::Node parsed;
  try {
    parsed = YAML::Load(value);
  } catch (const YAML::Exception& e) {
    *why = "cannot parse value: " + std::string(e.what());
    return false;
  }
  std::vector<std::string> parts;
  std::string cur;
  for (char c : path) {
    if (c == '.') {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  parts.push_back(cur);
  for (const auto& part : parts) {
    if (part.empty()) {
      *why = "empty key component";
      return false;
    }
  }
  // yaml-cpp nodes are references: walk with explicit copies of child handles.
  std::vector<YAML::Node> chain{root};
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    YAML::Node child = chain.back()[parts[i]];
    if (child.IsDefined() && child.IsScalar()) {
      // A plugin given by name ("storage.queue: storage-kyoto"): make it a map so
      // that its options can be set.
      YAML::Node m(YAML::NodeType::Map);
      m["plugin"] = child.Scalar();
      chain.back()[parts[i]] = m;
      child.reset(chain.back()[parts[i]]);
    } else if (!child.IsDefined() || child.IsNull()) {
      chain.back()[parts[i]] = YAML::Node(YAML::NodeType::Map);
      child.reset(chain.back()[parts[i]]);
    }
    chain.push_back(child);
  }
  chain.back()[parts.back()] = parsed;
  return true;
}

}  // namespace

std::vector<std::string> enumChoices(const KeySpec& spec) { return splitComma(spec.choices ? spec.choices : ""); }

struct Config::Impl {
  std::string file;
  YAML::Node root;
  std::map<std::string, OptionValue> values;
  std::map<std::string, std::pair<PluginRef, YAML::Node>> plugins;  // key -> (ref, options node)
  std::map<std::string, std::vector<std::pair<PluginRef, YAML::Node>>> plugin_lists;
  std::set<std::string> given;
  std::vector<std::string> set_paths;  // the key paths --set gave
  YAML::Node original;                 // the file as written, before --set

  // Where a problem at `path` comes from: "--set" when a --set gave that key, a value
  // holding it, or made the section it is in; else the file.
  std::string sourceOf(const std::string& path) const;
};

std::string Config::Impl::sourceOf(const std::string& path) const {
  auto inOriginal = [&](const std::string& p) {
    YAML::Node cur = original;
    std::size_t start = 0;
    for (;;) {
      const auto dot = p.find('.', start);
      if (!cur.IsMap()) return false;
      YAML::Node next = cur[p.substr(start, dot == std::string::npos ? std::string::npos : dot - start)];
      if (!next.IsDefined()) return false;
      if (dot == std::string::npos) return true;
      cur.reset(next);
      start = dot + 1;
    }
  };
  for (const auto& set : set_paths) {
    if (set == path || path.rfind(set + ".", 0) == 0) return "--set";
    if (set.rfind(path + ".", 0) == 0 && !inOriginal(path)) return "--set";
  }
  return file;
}

Config::Config(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Config::Config(const Config& o) : impl_(std::make_unique<Impl>(*o.impl_)) {}
Config& Config::operator=(const Config& o) {
  impl_ = std::make_unique<Impl>(*o.impl_);
  return *this;
}
Config::Config(Config&&) noexcept = default;
Config& Config::operator=(Config&&) noexcept = default;
Config::~Config() = default;

const std::string& Config::file() const { return impl_->file; }
std::string Config::sourceOf(const std::string& path) const { return impl_->sourceOf(path); }

Config Config::defaults() {
  std::vector<ConfigProblem> problems;
  auto loaded = loadText("", "", {}, &problems);
  if (!loaded.isOk()) {
    // A schema default that its own key refuses: a bug of schema.cc.
    for (const auto& p : problems) std::fprintf(stderr, "lcc: internal error: schema default: %s\n", p.toString().c_str());
    std::abort();
  }
  return std::move(loaded).value();
}

Result<Config> Config::load(const std::string& file, const std::vector<std::string>& overrides,
                            std::vector<ConfigProblem>* problems) {
  std::FILE* f = std::fopen(file.c_str(), "rb");
  if (f == nullptr) {
    const int err = errno;
    std::string where = Config::absolutePath(file);
    where = where == file ? "" : " (" + where + ")";
    problems->push_back({file, "", "cannot open the file" + where + ": " + std::strerror(err)});
    return Status::invalidArgument("cannot open " + file);
  }
  std::string text;
  char buf[8192];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
  std::fclose(f);
  return loadText(text, file, overrides, problems);
}

Result<Config> Config::loadText(const std::string& yaml, const std::string& file,
                                const std::vector<std::string>& overrides, std::vector<ConfigProblem>* problems) {
  auto impl = std::make_unique<Impl>();
  impl->file = file;
  const std::size_t before = problems->size();
  try {
    impl->root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    problems->push_back({file, "", "YAML syntax error at line " + std::to_string(e.mark.line + 1) + ": " + e.msg});
    return Status::invalidArgument("config has problems");
  }
  if (impl->root.IsNull()) impl->root = YAML::Node(YAML::NodeType::Map);
  if (!impl->root.IsMap()) {
    problems->push_back({file, "", "the top level must be a map of keys"});
    return Status::invalidArgument("config has problems");
  }
  impl->original = YAML::Clone(impl->root);
  for (const auto& ov : overrides) {
    auto eq = ov.find('=');
    if (eq == std::string::npos || eq == 0) {
      problems->push_back({"--set", ov, "must be key.path=value"});
      continue;
    }
    std::string why;
    impl->set_paths.push_back(ov.substr(0, eq));
    if (!applyOverride(impl->root, ov.substr(0, eq), ov.substr(eq + 1), &why)) {
      problems->push_back({"--set", ov.substr(0, eq), why});
    }
  }

  // Index the schema, and the map paths that are sections (prefixes of keys).
  std::map<std::string, const KeySpec*> by_path;
  std::set<std::string> sections;
  std::vector<std::string> names;  // keys and sections, for "did you mean"
  for (const auto& spec : schema()) {
    by_path[spec.path] = &spec;
    names.emplace_back(spec.path);
    std::string p = spec.path;
    for (auto dot = p.find('.'); dot != std::string::npos; dot = p.find('.', dot + 1)) sections.insert(p.substr(0, dot));
  }
  names.insert(names.end(), sections.begin(), sections.end());
  const Impl& source = *impl;

  // Walk the document: every leaf must be a schema key.
  std::function<void(const YAML::Node&, const std::string&)> walk = [&](const YAML::Node& node, const std::string& prefix) {
    for (const auto& kv : node) {
      const std::optional<std::string> name = keyText(kv.first);
      if (!name) {
        problems->push_back({source.sourceOf(prefix), prefix, notAKey(kv.first)});
        continue;
      }
      const std::string& key = *name;
      std::string path = prefix.empty() ? key : prefix + "." + key;
      auto it = by_path.find(path);
      if (it != by_path.end()) {
        impl->given.insert(path);
        continue;
      }
      if (sections.count(path) != 0) {
        if (kv.second.IsMap()) {
          walk(kv.second, path);
        } else if (!kv.second.IsNull()) {
          problems->push_back({source.sourceOf(path), path, "must be a map of keys (got " + scalarText(kv.second) + ")"});
        }
        continue;
      }
      problems->push_back({source.sourceOf(path), path, "unknown key" + didYouMean(path, names)});
    }
  };
  walk(impl->root, "");

  auto lookup = [&](const std::string& path) -> YAML::Node {
    YAML::Node cur = impl->root;
    std::size_t start = 0;
    for (;;) {
      auto dot = path.find('.', start);
      std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
      if (!cur.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
      YAML::Node next = cur[part];
      if (!next.IsDefined()) return next;
      cur.reset(next);  // rebind: operator= would overwrite the tree
      if (dot == std::string::npos) return cur;
      start = dot + 1;
    }
  };

  auto parsePluginEntry = [&](const YAML::Node& n, const std::string& key,
                              std::pair<PluginRef, YAML::Node>* out) -> bool {
    out->first.key = key;
    if (n.IsScalar()) {
      out->first.plugin = n.Scalar();
      return true;
    }
    if (n.IsMap()) {
      for (const auto& kv : n) {
        auto k = keyText(kv.first);
        if (!k) {
          problems->push_back({source.sourceOf(key), key, notAKey(kv.first)});
        } else if (*k != "plugin" && *k != "options") {
          problems->push_back({source.sourceOf(key + "." + *k), key + "." + *k,
                               "unknown key" + didYouMean(*k, {"plugin", "options"})});
        }
      }
      if (!n["plugin"] || !n["plugin"].IsScalar()) {
        problems->push_back({source.sourceOf(key + ".plugin"), key + ".plugin", "missing: the plugin's name"});
        return false;
      }
      out->first.plugin = n["plugin"].Scalar();
      if (n["options"]) {
        if (!n["options"].IsMap() && !n["options"].IsNull()) {
          problems->push_back({source.sourceOf(key + ".options"), key + ".options",
                               "must be a map (got " + scalarText(n["options"]) + ")"});
          return false;
        }
        out->second = n["options"];
      }
      return true;
    }
    problems->push_back({source.sourceOf(key), key,
                         "must be a plugin name or {plugin: NAME, options: {...}} (got " + scalarText(n) + ")"});
    return false;
  };

  for (const auto& spec : schema()) {
    YAML::Node n = lookup(spec.path);
    if (spec.type == KeyType::kPlugin) {
      std::pair<PluginRef, YAML::Node> entry;
      if (n.IsDefined() && !n.IsNull()) {
        parsePluginEntry(n, spec.path, &entry);
      } else {
        entry.first = {spec.path, spec.default_value};
      }
      impl->plugins[spec.path] = entry;
      continue;
    }
    if (spec.type == KeyType::kPluginList) {
      std::vector<std::pair<PluginRef, YAML::Node>> list;
      if (n.IsDefined() && !n.IsNull()) {
        if (!n.IsSequence()) {
          problems->push_back({source.sourceOf(spec.path), spec.path, "must be a list of plugins (got " + scalarText(n) + ")"});
        } else {
          std::size_t i = 0;
          for (const auto& item : n) {
            std::pair<PluginRef, YAML::Node> entry;
            if (parsePluginEntry(item, std::string(spec.path) + "[" + std::to_string(i) + "]", &entry)) {
              list.push_back(entry);
            }
            ++i;
          }
        }
      } else {
        for (const auto& name : splitComma(spec.default_value)) list.push_back({{spec.path, name}, YAML::Node()});
      }
      impl->plugin_lists[spec.path] = list;
      continue;
    }
    Parsed parsed = parseValue(spec.type, &n, spec.default_value, spec.min, spec.max, spec.choices);
    if (!parsed.error.empty()) {
      problems->push_back({source.sourceOf(spec.path), spec.path, parsed.error});
      continue;
    }
    impl->values[spec.path] = std::move(parsed.value);
  }

  if (problems->size() != before) return Status::invalidArgument("config has problems");
  return Config(std::move(impl));
}

namespace {
[[noreturn]] void configBug(const std::string& path, const char* what) {
  std::fprintf(stderr, "lcc: internal error: config key %s %s\n", path.c_str(), what);
  std::abort();
}
}  // namespace

bool Config::getBool(const std::string& path) const {
  auto it = impl_->values.find(path);
  if (it == impl_->values.end() || !std::holds_alternative<bool>(it->second)) configBug(path, "is not a bool key");
  return std::get<bool>(it->second);
}

std::int64_t Config::getInt(const std::string& path) const {
  auto it = impl_->values.find(path);
  if (it == impl_->values.end() || !std::holds_alternative<std::int64_t>(it->second)) configBug(path, "is not a number key");
  return std::get<std::int64_t>(it->second);
}

std::string Config::getString(const std::string& path) const {
  auto it = impl_->values.find(path);
  if (it == impl_->values.end() || !std::holds_alternative<std::string>(it->second)) configBug(path, "is not a string key");
  return std::get<std::string>(it->second);
}

std::vector<std::string> Config::getList(const std::string& path) const {
  auto it = impl_->values.find(path);
  if (it == impl_->values.end() || !std::holds_alternative<std::vector<std::string>>(it->second)) {
    configBug(path, "is not a list key");
  }
  return std::get<std::vector<std::string>>(it->second);
}

PluginRef Config::getPlugin(const std::string& path) const {
  auto it = impl_->plugins.find(path);
  if (it == impl_->plugins.end()) configBug(path, "is not a plugin key");
  return it->second.first;
}

std::vector<PluginRef> Config::getPluginList(const std::string& path) const {
  auto it = impl_->plugin_lists.find(path);
  if (it == impl_->plugin_lists.end()) configBug(path, "is not a plugin list key");
  std::vector<PluginRef> out;
  for (const auto& e : it->second) out.push_back(e.first);
  return out;
}

bool Config::isSet(const std::string& path) const { return impl_->given.count(path) != 0; }

Result<OptionsView> Config::pluginOptions(const PluginRef& ref, const OptionSpec* specs, std::size_t count,
                                          std::vector<ConfigProblem>* problems) const {
  YAML::Node options;
  if (auto it = impl_->plugins.find(ref.key); it != impl_->plugins.end()) {
    options = it->second.second;
  } else {
    for (const auto& [key, list] : impl_->plugin_lists) {
      for (const auto& e : list) {
        if (e.first.key == ref.key) options = e.second;
      }
    }
  }
  const std::size_t before = problems->size();
  const std::string base = ref.key + ".options";
  std::map<std::string, OptionValue, std::less<>> values;
  std::vector<std::string> known;
  for (std::size_t i = 0; i < count; ++i) known.emplace_back(specs[i].name);
  if (options.IsDefined() && options.IsMap()) {
    for (const auto& kv : options) {
      auto k = keyText(kv.first);
      if (!k) {
        problems->push_back({impl_->sourceOf(base), base, notAKey(kv.first)});
      } else if (std::find(known.begin(), known.end(), *k) == known.end()) {
        problems->push_back({impl_->sourceOf(base + "." + *k), base + "." + *k,
                             "unknown option of plugin " + ref.plugin + didYouMean(*k, known)});
      }
    }
  }
  for (std::size_t i = 0; i < count; ++i) {
    const OptionSpec& s = specs[i];
    YAML::Node n;
    if (options.IsDefined() && options.IsMap()) n = options[s.name];
    Parsed parsed = parseValue(fromOptionType(s.type), &n, s.default_value, s.min, s.max);
    if (!parsed.error.empty()) {
      problems->push_back({impl_->sourceOf(base + "." + s.name), base + "." + s.name, parsed.error});
      continue;
    }
    values[s.name] = std::move(parsed.value);
  }
  if (problems->size() != before) return Status::invalidArgument("plugin options have problems");
  return OptionsView(std::move(values));
}

std::string Config::absolutePath(const std::string& path) {
  std::error_code ec;
  auto abs = std::filesystem::absolute(path, ec);
  if (ec) return path;
  return abs.lexically_normal().string();
}

namespace {
std::string valueText(const OptionValue& v) {
  if (auto b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (auto i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  if (auto s = std::get_if<std::string>(&v)) return *s;
  std::string out = "[";
  const auto& list = std::get<std::vector<std::string>>(v);
  for (std::size_t i = 0; i < list.size(); ++i) out += (i ? ", " : "") + list[i];
  return out + "]";
}
}  // namespace

std::string Config::dump() const {
  std::ostringstream out;
  for (const auto& spec : schema()) {
    out << spec.path << " = ";
    if (spec.type == KeyType::kPlugin) {
      out << getPlugin(spec.path).plugin;
    } else if (spec.type == KeyType::kPluginList) {
      auto list = getPluginList(spec.path);
      out << "[";
      for (std::size_t i = 0; i < list.size(); ++i) out << (i ? ", " : "") << list[i].plugin;
      out << "]";
    } else {
      out << valueText(impl_->values.at(spec.path));
    }
    out << "\n";
  }
  return out.str();
}

std::string Config::describeDefaults() {
  std::ostringstream out;
  for (const auto& spec : schema()) {
    out << spec.path << " = " << (spec.type == KeyType::kStringList || spec.type == KeyType::kPluginList ? "[" : "")
        << spec.default_value
        << (spec.type == KeyType::kStringList || spec.type == KeyType::kPluginList ? "]" : "") << "    # " << spec.help
        << "\n";
  }
  return out.str();
}

}  // namespace lcc
