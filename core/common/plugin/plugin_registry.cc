#include "plugin_registry.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/dll/shared_library.hpp>
#include <filesystem>

namespace lcc {
namespace {

std::string versionText(std::uint32_t major, std::uint32_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

const char* interfaceName(std::uint32_t bit) {
  switch (bit) {
    case kProvidesQueueStore: return "a queue store";
    case kProvidesContentStore: return "a content store";
    case kProvidesProviderStore: return "a provider store";
    case kProvidesFetcher: return "a fetcher";
    case kProvidesExporter: return "an exporter";
  }
  return "something";
}

// Postfix-style file safety: a regular file, not writable by group or other, owned
// by root or by us.
Status checkFileSafety(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return Status::notFound(path + ": plugin file not found");
  if (!S_ISREG(st.st_mode)) return Status::invalidArgument(path + ": not a regular file");
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return Status::invalidArgument(path + ": refused: the file is writable by group or other users");
  }
  if (st.st_uid != 0 && st.st_uid != ::geteuid()) {
    return Status::invalidArgument(path + ": refused: the file is owned by another user (uid " +
                                   std::to_string(st.st_uid) + ")");
  }
  return Status::ok();
}

}  // namespace

std::string defaultPluginDir() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "./build/plugins";
  auto bin = exe.parent_path();
  for (auto candidate : {bin.parent_path() / "plugins", bin.parent_path() / "lib" / "lcc" / "plugins"}) {
    if (std::filesystem::is_directory(candidate, ec)) return candidate.string();
  }
  return "./build/plugins";
}

PluginRegistry::PluginRegistry(std::string plugin_dir, HostContext host)
    : dir_(Config::absolutePath(plugin_dir)), host_(std::move(host)) {}

PluginRegistry::~PluginRegistry() = default;

std::vector<const LoadedPlugin*> PluginRegistry::loaded() const {
  std::vector<const LoadedPlugin*> out;
  for (const auto& [name, p] : plugins_) out.push_back(p.get());
  return out;
}

Result<const LoadedPlugin*> PluginRegistry::load(const std::string& name) {
  if (auto it = plugins_.find(name); it != plugins_.end()) return static_cast<const LoadedPlugin*>(it->second.get());
  if (name.empty() || name.find('/') != std::string::npos || name.find("..") != std::string::npos) {
    return Status::invalidArgument("plugin name '" + name + "' is not a plain file stem");
  }
  return loadPath(dir_ + "/" + name + ".so");
}

Result<const LoadedPlugin*> PluginRegistry::loadPath(const std::string& given_path) {
  const std::string path = Config::absolutePath(given_path);
  const std::string stem = std::filesystem::path(path).stem().string();
  if (auto it = plugins_.find(stem); it != plugins_.end()) return static_cast<const LoadedPlugin*>(it->second.get());
  LCC_RETURN_IF_ERROR(checkFileSafety(path));

  auto lib = std::make_shared<boost::dll::shared_library>();
  boost::system::error_code ec;
  lib->load(boost::dll::fs::path(path), boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local, ec);
  if (ec) {
    const char* why = ::dlerror();
    return Status::invalidArgument(path + ": cannot load: " + (why ? std::string(why) : ec.message()));
  }
  if (!lib->has("lcc_plugin")) {
    return Status::invalidArgument(path + ": not an LCC plugin: expected the exported alias lcc_plugin, found none");
  }
  using DescribeFn = const PluginDescriptor*();
  const PluginDescriptor* d = nullptr;
  try {
    d = lib->get_alias<DescribeFn>("lcc_plugin")();
  } catch (...) {
    return Status::invalidArgument(path + ": lcc_plugin() threw; expected it to return a descriptor");
  }
  if (d == nullptr) return Status::invalidArgument(path + ": lcc_plugin() returned no descriptor");
  // Versions first: they protect the rest of the descriptor.
  if (d->abi_major != LCC_PLUGIN_ABI_MAJOR) {
    return Status::invalidArgument(path + ": plugin ABI " + versionText(d->abi_major, d->abi_minor) + ", lccd supports " +
                                   std::to_string(LCC_PLUGIN_ABI_MAJOR) + ".x; rebuild the plugin");
  }
  if (d->abi_minor > LCC_PLUGIN_ABI_MINOR) {
    return Status::invalidArgument(path + ": plugin ABI " + versionText(d->abi_major, d->abi_minor) +
                                   " is newer than lccd's " + versionText(LCC_PLUGIN_ABI_MAJOR, LCC_PLUGIN_ABI_MINOR) +
                                   "; upgrade lccd or rebuild the plugin");
  }
  if (d->abi_minor == LCC_PLUGIN_ABI_MINOR && d->descriptor_size != sizeof(PluginDescriptor)) {
    return Status::invalidArgument(path + ": descriptor size " + std::to_string(d->descriptor_size) + ", expected " +
                                   std::to_string(sizeof(PluginDescriptor)) + "; rebuild the plugin");
  }
  if (d->build_signature == nullptr || std::string(d->build_signature) != LCC_BUILD_SIGNATURE) {
    return Status::invalidArgument(path + ": build signature '" +
                                   (d->build_signature ? d->build_signature : "(none)") + "', expected '" +
                                   LCC_BUILD_SIGNATURE + "'; rebuild the plugin with this lccd's compiler and flags");
  }
  if (d->api_hash == nullptr || std::string(d->api_hash) != LCC_API_HASH) {
    return Status::invalidArgument(path + ": built against other plugin headers (api hash " +
                                   std::string(d->api_hash ? d->api_hash : "(none)").substr(0, 12) + ", expected " +
                                   std::string(LCC_API_HASH).substr(0, 12) + "); rebuild the plugin");
  }
  if (d->name == nullptr || stem != d->name) {
    return Status::invalidArgument(path + ": plugin calls itself '" + std::string(d->name ? d->name : "(none)") +
                                   "', expected '" + stem + "' (the file name)");
  }
  auto p = std::make_unique<LoadedPlugin>();
  p->name = stem;
  p->path = path;
  p->descriptor = d;
  p->library = lib;
  const LoadedPlugin* raw = p.get();
  plugins_[stem] = std::move(p);
  return raw;
}

Status PluginRegistry::ensureInit(LoadedPlugin& p) {
  if (p.initialized) return Status::ok();
  if (p.descriptor->init != nullptr) {
    Status s;
    try {
      s = p.descriptor->init(host_);
    } catch (...) {
      s = Status::internal("init threw an exception");
    }
    if (!s.isOk()) return Status::invalidArgument(p.path + ": init failed: " + s.message());
  }
  p.initialized = true;
  return Status::ok();
}

template <typename T>
Result<PluginPtr<T>> PluginRegistry::make(const std::string& name, const OptionsView& options, std::uint32_t bit,
                                          Result<T*> (*PluginDescriptor::*factory)(const HostContext&,
                                                                                   const OptionsView&)) {
  LCC_ASSIGN_OR_RETURN(const LoadedPlugin* cp, load(name));
  LoadedPlugin& p = *plugins_.at(cp->name);
  auto fn = p.descriptor->*factory;
  if ((p.descriptor->provides & bit) == 0 || fn == nullptr) {
    return Status::invalidArgument(p.path + ": plugin " + p.name + " does not provide " + interfaceName(bit));
  }
  LCC_RETURN_IF_ERROR(ensureInit(p));
  Result<T*> made = Status::internal("factory did not run");
  try {
    made = fn(host_, options);
  } catch (const std::exception& e) {
    return Status::internal(p.path + ": factory threw: " + e.what());
  } catch (...) {
    return Status::internal(p.path + ": factory threw a non-standard exception");
  }
  if (!made.isOk()) return made.status().withContext(p.path);
  if (made.value() == nullptr) return Status::internal(p.path + ": factory returned nothing");
  return PluginPtr<T>(made.value(), PluginDeleter{p.library});
}

template <typename T>
Result<PluginPtr<T>> PluginRegistry::makeFromConfig(const Config& config, const PluginRef& ref,
                                                    std::vector<ConfigProblem>* problems, std::uint32_t bit,
                                                    Result<T*> (*PluginDescriptor::*factory)(const HostContext&,
                                                                                             const OptionsView&)) {
  LCC_ASSIGN_OR_RETURN(const LoadedPlugin* p, load(ref.plugin));
  LCC_ASSIGN_OR_RETURN(OptionsView opts,
                       config.pluginOptions(ref, p->descriptor->options, p->descriptor->option_count, problems));
  return make<T>(ref.plugin, opts, bit, factory);
}

Result<OptionsView> PluginRegistry::defaultOptions(const std::string& name,
                                                   const std::map<std::string, std::string>& overrides) {
  LCC_ASSIGN_OR_RETURN(const LoadedPlugin* p, load(name));
  // Reuse the config machinery: a document naming the plugin under a plugin key,
  // with the overrides as its options, checked against the plugin's table.
  std::vector<ConfigProblem> problems;
  std::vector<std::string> sets;
  for (const auto& [k, v] : overrides) sets.push_back("fetcher.options." + k + "=" + v);
  sets.push_back("fetcher.plugin=" + name);
  auto cfg = Config::loadText("{}", "(options)", sets, &problems);
  if (!cfg.isOk()) {
    std::string why;
    for (const auto& pr : problems) why += pr.toString() + "; ";
    return Status::invalidArgument(why);
  }
  auto opts = cfg->pluginOptions(cfg->getPlugin("fetcher"), p->descriptor->options, p->descriptor->option_count,
                                 &problems);
  if (!opts.isOk()) {
    std::string why;
    for (const auto& pr : problems) why += pr.toString() + "; ";
    return Status::invalidArgument(why);
  }
  return opts;
}

#define LCC_REGISTRY_MAKERS(Type, Method, Bit, Field)                                                          \
  Result<PluginPtr<Type>> PluginRegistry::Method(const Config& config, const PluginRef& ref,                  \
                                                 std::vector<ConfigProblem>* problems) {                      \
    return makeFromConfig<Type>(config, ref, problems, Bit, &PluginDescriptor::Field);                         \
  }                                                                                                            \
  Result<PluginPtr<Type>> PluginRegistry::Method(const std::string& name, const OptionsView& options) {       \
    return make<Type>(name, options, Bit, &PluginDescriptor::Field);                                           \
  }

LCC_REGISTRY_MAKERS(QueueStore, makeQueueStore, kProvidesQueueStore, make_queue_store)
LCC_REGISTRY_MAKERS(ContentStore, makeContentStore, kProvidesContentStore, make_content_store)
LCC_REGISTRY_MAKERS(ProviderStore, makeProviderStore, kProvidesProviderStore, make_provider_store)
LCC_REGISTRY_MAKERS(Fetcher, makeFetcher, kProvidesFetcher, make_fetcher)
LCC_REGISTRY_MAKERS(Exporter, makeExporter, kProvidesExporter, make_exporter)

#undef LCC_REGISTRY_MAKERS

}  // namespace lcc
