#pragma once
// Progress of long work on stderr, for a person watching a terminal: "matrix: 120/1296 rows, 14 s, ETA
// 2 min 10 s", rewritten in place at most five times a second. Silent when stderr is not a terminal or
// when the command prints JSON, so that logs and pipes stay clean.
#include <chrono>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>

namespace kvlayout::cli {

class Progress {
 public:
  // @param enabled  false: every call does nothing (use terminal_progress_wanted()).
  explicit Progress(bool enabled) : enabled_(enabled) {}

  // Reports `done` of `total` items of `phase`; a new phase starts a new line.
  void update(const std::string& phase, std::size_t done, std::size_t total);

  // A callback for work that reports (done, total) without a phase name.
  std::function<void(std::size_t, std::size_t)> reporter(const std::string& phase);

 private:
  bool enabled_;
  std::mutex mutex_;
  std::string phase_;
  std::chrono::steady_clock::time_point started_, last_print_;
};

// Whether progress should be shown: stderr is a terminal and the output is not JSON.
bool terminal_progress_wanted(bool json);

// "45 s", "2 min 10 s", "1 h 3 min".
std::string format_duration(double seconds);

}  // namespace kvlayout::cli
