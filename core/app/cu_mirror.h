// cu_mirror.h — `lcc cu mirror DIR`: keeps a folder equal to what the LCC holds for a
// set of providers, for content users that read files (SWISH++, ht://Dig;
// docs/content-users.md).
//
// Each run asks the CU port for the changes after the cursor's seq (XML with content and
// removals, in batches of `batch` records), writes each stored record to its path (cu-tar's
// member path, plugins/cu-tar/README.md) through a temporary name in the same folder
// (sync, rename), removes the path of each removal, syncs the folders it changed, and
// only then replaces the cursor (DIR/.lcc-mirror) — so a crash leaves no half file and a
// cursor that never covers a change it did not apply. A 150 answer (changes purged), a
// missing cursor, another filter, a store whose seq went back, or `full` make a full
// resync: everything the LCC holds, then every file under DIR/<digits>/ it did not
// write is removed.
// THREADS: one run, one thread; DIR/.lcc-mirror.lock (flock) keeps two runs apart.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "capi/cu_client.h"
#include "lcc/env.h"
#include "lcc/status.h"
#include "lcc/types.h"

namespace lcc::mirror {

inline constexpr char kCursorName[] = ".lcc-mirror";
inline constexpr char kLockName[] = ".lcc-mirror.lock";
// The temporary name of a file being written, in its own folder. '^' never occurs
// raw in a member path (it is always %5E), so no URL can be mapped onto it.
inline constexpr char kPartName[] = ".lcc-mirror^part";

// True when `rel` is a path the mirror may write under DIR: relative, non-empty
// components of at most 255 bytes, none `.` or `..`, no NUL, at most 2048 bytes.
bool isSafeRelativePath(std::string_view rel);

// The path under DIR of the record (pid, url, mime): cu-tar's member path, checked by
// isSafeRelativePath (an error, never a path outside DIR, when it fails).
Result<std::string> mirrorPath(ProviderId pid, std::string_view url, std::string_view mime);

// The cursor file: the last seq applied and the filter it was applied with.
struct Cursor {
  std::uint64_t seq = 0;
  std::string filter;
};
// nullopt when there is none; an error when it is unreadable or malformed.
Result<std::optional<Cursor>> readCursor(Env* env, const std::string& dir);
Status writeCursor(Env* env, const std::string& dir, const Cursor& cursor);

struct Options {
  std::string dir;
  capi::Endpoint endpoint;
  net::TlsContextPtr tls;
  int timeout_ms = 60000;
  std::vector<ProviderId> providers;  // empty: every provider
  std::vector<std::string> mimes, prefixes;
  bool full = false;                  // a full resync whatever the cursor says
  std::uint64_t batch = 10000;        // records per answer; the cursor moves after each
};

struct Stats {
  std::uint64_t from_seq = 0, to_seq = 0;
  std::uint64_t records = 0, written = 0, removed = 0, missing = 0, bytes = 0;
  bool full = false;
  std::string why_full;  // why the run was a full resync
};

enum class Outcome {
  kOk,            // DIR equals the LCC's answer up to stats.to_seq
  kFailed,        // refused, broke off, a file could not be written, content missing
  kNoConnection,  // the CU port could not be reached, or DIR could not be opened
  kLocked,        // another run holds DIR's lock
};

struct Report {
  Outcome outcome = Outcome::kOk;
  std::string message;  // why, when not kOk
  Stats stats;
};

struct Callbacks {
  std::function<void(const std::string&)> warn;   // one problem with one record
  std::function<void(const Stats&)> progress;     // after each record
};

// One run: lock, read the cursor, apply the changes, write the cursor.
Report runMirror(const Options& options, Env* env, const Callbacks& callbacks);

// The filter as the cursor stores it (providers, MIME patterns, prefixes, sorted).
std::string filterText(const Options& options);

}  // namespace lcc::mirror
