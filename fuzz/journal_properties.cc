// checkJournalProperties (parser_properties.h): lcc::Journal on a crafted segment.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/posix_env.h"
#include "lcc/support/journal.h"
#include "parser_properties.h"

namespace lcc::fuzz {
namespace {

// A folder of this process's own (tmpfs when there is one), emptied for each input and
// removed when the process exits.
struct ScratchDir {
  std::string path;
  ScratchDir() {
    const char* base = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
    path = std::string(base) + "/lcc-journal-fuzz-" + std::to_string(::getpid());
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

const std::string& scratchDir() {
  static const ScratchDir dir;
  return dir.path;
}

struct Replayed {
  std::vector<std::pair<JournalPos, std::string>> records;
  JournalReplayInfo info;
  std::string error;
};

Replayed replayAll(Journal& j) {
  Replayed r;
  auto info = j.replay(0, [&](JournalPos pos, std::string_view payload) {
    r.records.emplace_back(pos, std::string(payload));
    return Status();
  });
  if (info.isOk()) r.info = *info;
  else r.error = info.status().toString();
  return r;
}

std::string checkOrder(const Replayed& r) {
  for (std::size_t i = 1; i < r.records.size(); ++i) {
    if (r.records[i].first != r.records[i - 1].first + 1) return "replayed positions are not consecutive";
  }
  if (!r.records.empty() && (r.info.first != r.records.front().first || r.info.last != r.records.back().first)) {
    return "replay info names other records than were replayed";
  }
  return r.info.records == r.records.size() ? "" : "replay info counts other records than were replayed";
}

}  // namespace

// The first byte picks the segment's name (its first position: 1, or a number from
// the next 8 bytes); the rest is the segment file.
std::string checkJournalProperties(std::string_view data) {
  const std::string& dir = scratchDir();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::uint64_t first = 1;
  if (!data.empty() && (data[0] & 1) && data.size() >= 9) {
    first = 0;
    for (int i = 1; i <= 8; ++i) first = (first << 8) | static_cast<unsigned char>(data[i]);
    data.remove_prefix(9);
  } else if (!data.empty()) {
    data.remove_prefix(1);
  }
  char name[32];
  std::snprintf(name, sizeof name, "%020llu.jnl", static_cast<unsigned long long>(first));
  std::ofstream(dir + "/" + name, std::ios::binary).write(data.data(), static_cast<std::streamsize>(data.size()));
  JournalOptions options;
  options.max_record_bytes = 1 << 20;
  auto journal = Journal::open(posixEnv(), dir, options);
  if (!journal.isOk()) return journal.status().toString().empty() ? "open refused without a message" : "";
  const Replayed before = replayAll(**journal);
  if (!before.error.empty()) return "";  // refused (corruption, an impossible position): reported, fine
  if (std::string why = checkOrder(before); !why.empty()) return why;
  if (before.info.corruption) return "";  // the QM raises cache-crash and appends nothing more
  auto pos = (*journal)->append("after the fuzz input");
  if (!pos.isOk()) return "";
  auto committed = (*journal)->commit();
  if (!committed.isOk()) return "";
  const Replayed after = replayAll(**journal);
  if (after.records.empty() || after.records.back().second != "after the fuzz input") {
    return "the record appended after the input does not replay (" + after.error + ")";
  }
  if (after.records.size() != before.records.size() + 1 && after.error.empty()) return "records lost by an append";
  return checkOrder(after);
}

}  // namespace lcc::fuzz
