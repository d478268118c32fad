// The text of `--version` for lccd, lcc and lcc-bot (docs/commands.md): the version, the
// git commit the build was configured at, the plugin ABI, and the libraries, as
// `nginx -V` does.
#pragma once

#include <string>
#include <string_view>

namespace lcc {

// Several lines, the first "<program> <version>"; no newline after the last one.
std::string versionText(std::string_view program);

}  // namespace lcc
