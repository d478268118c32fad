// plugin_list.h — the plugin lists CMake hands the suites as compile definitions
// ("storage-memory,storage-kyoto").
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace lcc::testing {

// The names of a comma-separated list, empty ones dropped: "a,,b" -> {"a", "b"}.
inline std::vector<std::string> splitList(std::string_view csv) {
  std::vector<std::string> out;
  while (!csv.empty()) {
    const std::size_t comma = csv.find(',');
    const std::string_view name = csv.substr(0, comma);
    if (!name.empty()) out.emplace_back(name);
    if (comma == std::string_view::npos) break;
    csv.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace lcc::testing
