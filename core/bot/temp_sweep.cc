#include "bot/temp_sweep.h"

#include <signal.h>

#include <cerrno>
#include <charconv>

namespace lcc::bot {

bool parseTempName(std::string_view name, pid_t* pid) {
  constexpr std::string_view kSuffix = ".tmp";
  if (name.size() <= kSuffix.size() || name.substr(name.size() - kSuffix.size()) != kSuffix) return false;
  name.remove_suffix(kSuffix.size());  // "<file>.<pid>-<n>"
  const auto dash = name.rfind('-');
  const auto dot = name.rfind('.', dash == std::string_view::npos ? 0 : dash);
  if (dash == std::string_view::npos || dot == std::string_view::npos || dot == 0 || dot + 1 >= dash ||
      dash + 1 >= name.size()) {
    return false;
  }
  auto digits = [](std::string_view s) { return s.find_first_not_of("0123456789") == std::string_view::npos; };
  const std::string_view p = name.substr(dot + 1, dash - dot - 1);
  if (!digits(p) || !digits(name.substr(dash + 1))) return false;
  long long v = 0;
  auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), v);
  if (ec != std::errc() || end != p.data() + p.size() || v <= 0 || v > 0x7fffffff) return false;
  *pid = static_cast<pid_t>(v);
  return true;
}

bool processAlive(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

TempSweepStats sweepTempFiles(Env& env, const std::string& root, const std::function<bool(pid_t)>& alive,
                              const std::atomic<bool>* stop) {
  TempSweepStats st;
  auto stopped = [&] { return stop != nullptr && stop->load(); };
  auto top = env.listDir(root);
  if (!top.isOk()) {
    if (top.status().code() != StatusCode::kNotFound) st.errors++;
    return st;
  }
  st.folders++;
  for (const std::string& a : top.value()) {
    if (stopped()) break;
    auto mid = env.listDir(root + "/" + a);
    if (!mid.isOk()) continue;  // a file at the top (not ours), or gone
    st.folders++;
    for (const std::string& b : mid.value()) {
      if (stopped()) break;
      const std::string dir = root + "/" + a + "/" + b;
      auto leaves = env.listDir(dir);
      if (!leaves.isOk()) continue;
      st.folders++;
      for (const std::string& name : leaves.value()) {
        pid_t pid = 0;
        if (!parseTempName(name, &pid)) continue;
        if (alive(pid)) {
          st.kept++;
          continue;
        }
        Status s = env.removeFile(dir + "/" + name);
        if (s.isOk() || s.code() == StatusCode::kNotFound) {
          st.removed++;
        } else {
          st.errors++;
        }
      }
    }
  }
  return st;
}

}  // namespace lcc::bot
