// plugin_registry.h — loads plugins (Boost.DLL) and makes objects from them.
//
// Lives for the whole process and is destroyed after the io_context and its
// threads (declare it first in main). Objects come back as PluginPtr<T>, whose
// deleter keeps the library loaded until the object is gone; nothing is ever
// unloaded while lccd runs. Load everything on the main thread before other
// threads start.
// Every refusal is one line naming the file, what was expected and what was found:
//   /abs/build/plugins/bad.so: plugin ABI 2.0, lccd supports 1.x; rebuild the plugin
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "../config/config.h"
#include "lcc/plugin.h"

namespace lcc {

// Deletes the object, then lets go of the library reference.
struct PluginDeleter {
  std::shared_ptr<void> library;
  template <typename T>
  void operator()(T* p) const {
    delete p;
  }
};

template <typename T>
using PluginPtr = std::unique_ptr<T, PluginDeleter>;

struct LoadedPlugin {
  std::string name;
  std::string path;  // absolute
  const PluginDescriptor* descriptor = nullptr;
  std::shared_ptr<void> library;  // boost::dll::shared_library, type-erased
  bool initialized = false;
};

// The plugin folder beside the running program: build/bin/X -> build/plugins,
// <prefix>/bin/X -> <prefix>/lib/lcc/plugins; else "./build/plugins". For programs run
// without a configuration that names one (lcc-bot, lcc cu query --cu URL …).
std::string defaultPluginDir();

class PluginRegistry {
 public:
  // `plugin_dir` is made absolute. `host` is handed to every plugin's init and factories.
  PluginRegistry(std::string plugin_dir, HostContext host);
  ~PluginRegistry();
  PluginRegistry(const PluginRegistry&) = delete;
  PluginRegistry& operator=(const PluginRegistry&) = delete;

  // Loads `<plugin_dir>/<name>.so` once and checks its descriptor.
  Result<const LoadedPlugin*> load(const std::string& name);
  // Loads a plugin from an explicit path (tests); the stem must match the name inside.
  Result<const LoadedPlugin*> loadPath(const std::string& path);

  // Load, check that it provides the interface, validate options from `config`, run
  // init once, call the factory (exceptions caught), wrap the result.
  Result<PluginPtr<QueueStore>> makeQueueStore(const Config& config, const PluginRef& ref, std::vector<ConfigProblem>* problems);
  Result<PluginPtr<ContentStore>> makeContentStore(const Config& config, const PluginRef& ref, std::vector<ConfigProblem>* problems);
  Result<PluginPtr<ProviderStore>> makeProviderStore(const Config& config, const PluginRef& ref, std::vector<ConfigProblem>* problems);
  Result<PluginPtr<Fetcher>> makeFetcher(const Config& config, const PluginRef& ref, std::vector<ConfigProblem>* problems);
  Result<PluginPtr<Exporter>> makeExporter(const Config& config, const PluginRef& ref, std::vector<ConfigProblem>* problems);

  // Same, with options given directly (tests, tools).
  Result<PluginPtr<QueueStore>> makeQueueStore(const std::string& name, const OptionsView& options);
  Result<PluginPtr<ContentStore>> makeContentStore(const std::string& name, const OptionsView& options);
  Result<PluginPtr<ProviderStore>> makeProviderStore(const std::string& name, const OptionsView& options);
  Result<PluginPtr<Fetcher>> makeFetcher(const std::string& name, const OptionsView& options);
  Result<PluginPtr<Exporter>> makeExporter(const std::string& name, const OptionsView& options);

  // Options with every default filled in, from the plugin's table (no YAML).
  Result<OptionsView> defaultOptions(const std::string& name, const std::map<std::string, std::string>& overrides = {});

  const std::string& pluginDir() const { return dir_; }
  const HostContext& host() const { return host_; }
  void setHost(const HostContext& host) { host_ = host; }
  std::vector<const LoadedPlugin*> loaded() const;

 private:
  template <typename T>
  Result<PluginPtr<T>> make(const std::string& name, const OptionsView& options, std::uint32_t bit,
                            Result<T*> (*PluginDescriptor::*factory)(const HostContext&, const OptionsView&));
  template <typename T>
  Result<PluginPtr<T>> makeFromConfig(const Config& config, const PluginRef& ref, std::vector<ConfigProblem>* problems,
                                      std::uint32_t bit,
                                      Result<T*> (*PluginDescriptor::*factory)(const HostContext&, const OptionsView&));
  Status ensureInit(LoadedPlugin& p);

  std::string dir_;
  HostContext host_;
  std::map<std::string, std::unique_ptr<LoadedPlugin>> plugins_;
};

}  // namespace lcc
