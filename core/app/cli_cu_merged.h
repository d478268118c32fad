// cli_cu_merged.h — `lcc cu query --cu URL --cu URL …`: the merged answer of several
// LCCs (docs/protocol.md §3.4) in any format, written to -o FILE or stdout.
#pragma once

#include <string>
#include <vector>

#include "app/cli.h"
#include "proto/cu_query.h"

namespace lcc::cli {

struct MergedQueryArgs {
  std::vector<std::string> cus;  // the LCCs' http(s):// URLs
  std::string out;               // -o FILE (through FILE.part); empty: stdout
  int timeout_s = 60;            // each step of asking a peer, and of reading its content
  TlsArgs tls;                   // https:// peers
};

// Exit 0: written; 1: refused, or the answer broke off; 2: usage, configuration or plugins.
int runMergedCuQuery(const Globals& g, const MergedQueryArgs& a, const proto::CuQuery& q);

}  // namespace lcc::cli
