// temp_sweep.h — removes the temporary files of robots that died mid-fetch.
//
// A robot writes `<file>.<pid>-<n>.tmp` next to the final name and renames it on
// success or removes it on failure; a robot killed in between leaves it behind. The
// sweep walks the content folder's fan-out (`<root>/<a>/<b>/<name>`, see
// core/botm/filename_store.h) and removes the temporary files whose writer process no
// longer exists. A file of a live process (a robot writing now, or an unrelated
// process that got the same pid) is kept: the sweep never races a writer.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "lcc/env.h"

namespace lcc::bot {

// "<anything>.<pid>-<n>.tmp" -> pid; false for every other name.
bool parseTempName(std::string_view name, pid_t* pid);

struct TempSweepStats {
  std::uint64_t folders = 0;  // folders read
  std::uint64_t removed = 0;  // temporary files of dead processes removed
  std::uint64_t kept = 0;     // temporary files of live processes kept
  std::uint64_t errors = 0;   // folders or files that could not be read or removed
};

// True when a process with this pid exists (kill(pid, 0)).
bool processAlive(pid_t pid);

// Walks root/<a>/<b>/ (two folder levels, like the BOT-M's fan-out). `stop` ends it
// early (the daemon is stopping).
TempSweepStats sweepTempFiles(Env& env, const std::string& root, const std::function<bool(pid_t)>& alive,
                              const std::atomic<bool>* stop = nullptr);

}  // namespace lcc::bot
