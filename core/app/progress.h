// progress.h — one repainted progress line on stderr for the lcc commands that take a
// while (cp send, cp scan, cu query): only when stderr is a terminal, at most four
// times a second, and nothing at all for a run shorter than the first interval.
// LCC_PROGRESS_INTERVAL_MS overrides the interval (0: repaint on every update; a script
// that records a terminal session, and the progress test, use it).
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace lcc::cli {

class TtyProgress {
 public:
  using Clock = std::chrono::steady_clock;
  explicit TtyProgress(std::chrono::milliseconds every = intervalFromEnv())
      : tty_(::isatty(STDERR_FILENO) == 1), every_(every), last_(Clock::now()) {}

  // 250 ms, or LCC_PROGRESS_INTERVAL_MS when it is a plain number of milliseconds.
  static std::chrono::milliseconds intervalFromEnv() {
    const char* v = std::getenv("LCC_PROGRESS_INTERVAL_MS");
    char* end = nullptr;
    const long ms = v != nullptr && *v != '\0' ? std::strtol(v, &end, 10) : -1;
    if (ms < 0 || ms > 60000 || end == nullptr || *end != '\0') return std::chrono::milliseconds(250);
    return std::chrono::milliseconds(ms);
  }

  // Repaints the line `make()` returns when the interval has passed (make is not
  // called otherwise).
  template <typename F>
  void update(F&& make) {
    if (!tty_) return;
    const auto now = Clock::now();
    if (every_.count() > 0 && now - last_ < every_) return;
    last_ = now;
    paint(make());
  }
  // The last state, then a newline — only if a line was shown.
  void done(const std::string& line) {
    if (!tty_ || !shown_) return;
    paint(line);
    std::fputc('\n', stderr);
  }

 private:
  void paint(const std::string& line) {
    // \r, the line, and spaces over what a longer previous line left.
    std::string pad = line.size() < width_ ? std::string(width_ - line.size(), ' ') : std::string();
    std::fprintf(stderr, "\r%s%s", line.c_str(), pad.c_str());
    std::fflush(stderr);
    width_ = line.size();
    shown_ = true;
  }

  bool tty_;
  std::chrono::milliseconds every_;
  Clock::time_point last_;
  std::size_t width_ = 0;
  bool shown_ = false;
};

}  // namespace lcc::cli
