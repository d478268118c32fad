// checkConfigProperties (parser_properties.h): the YAML config loader.
#include <string>
#include <vector>

#include "common/config/config.h"
#include "parser_properties.h"

namespace lcc::fuzz {

std::string checkConfigProperties(std::string_view data) {
  std::vector<ConfigProblem> problems;
  auto cfg = Config::loadText(std::string(data), "fuzz.yaml", {}, &problems);
  if (cfg.isOk()) {
    if (!problems.empty()) return "loaded, with a problem: " + problems.front().toString();
    (void)cfg->dump();
    (void)cfg->getString("node.data_dir");
    (void)cfg->getInt("uns.max_connections");
    (void)cfg->getPlugin("storage.queue");
    return "";
  }
  if (problems.empty()) return "refused without a problem: " + cfg.status().toString();
  for (const auto& p : problems) {
    if (p.file != "fuzz.yaml" || p.why.empty()) return "a problem not as 'file: key: why': " + p.toString();
  }
  return "";
}

}  // namespace lcc::fuzz
