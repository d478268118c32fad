// cp_hints.h — what a content provider can do about a refusal of `lcc cp send`: one
// sentence for each code a UNS answers an `init` or a `set` with (docs/protocol.md §2).
#pragma once

#include <string>

namespace lcc::cli {

// The next step after `init_rejected` with `code`; `message` is the UNS's text (it tells
// apart the kinds of 111), `uns` the --uns address (to name the LCC's host).
std::string initRejectionHint(unsigned code, const std::string& message, const std::string& uns);

// The next step after `set_rejected` with `code`.
std::string setRejectionHint(unsigned code);

}  // namespace lcc::cli
