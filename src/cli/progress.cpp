#include "cli/progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace kvlayout::cli {

std::string format_duration(double seconds) {
  const long s = static_cast<long>(seconds + 0.5);
  if (s < 60) return std::to_string(s) + " s";
  if (s < 3600) return std::to_string(s / 60) + " min " + std::to_string(s % 60) + " s";
  return std::to_string(s / 3600) + " h " + std::to_string(s % 3600 / 60) + " min";
}

bool terminal_progress_wanted(bool json) { return !json && isatty(STDERR_FILENO); }

void Progress::update(const std::string& phase, std::size_t done, std::size_t total) {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  if (phase != phase_) {
    phase_ = phase;
    started_ = now;
    last_print_ = {};
  }
  const bool finished = done >= total;
  if (!finished && now - last_print_ < std::chrono::milliseconds(200)) return;
  last_print_ = now;
  const double elapsed = std::chrono::duration<double>(now - started_).count();
  std::string line = phase + ": " + std::to_string(done) + "/" + std::to_string(total) + ", " + format_duration(elapsed);
  if (!finished && done > 0) line += ", ETA " + format_duration(elapsed / static_cast<double>(done) * static_cast<double>(total - done));
  std::fprintf(stderr, "\r%-72s%s", line.c_str(), finished ? "\n" : "");
  std::fflush(stderr);
}

std::function<void(std::size_t, std::size_t)> Progress::reporter(const std::string& phase) {
  return [this, phase](std::size_t done, std::size_t total) { update(phase, done, total); };
}

}  // namespace kvlayout::cli
