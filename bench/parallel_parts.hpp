#pragma once
// The bench's bare loops split their work the way the kernels do: part p of `threads` on its own thread,
// part 0 on the caller's.
#include <functional>
#include <thread>
#include <vector>

namespace kvlayout::bench {

// Runs part(0) .. part(threads - 1) at once and returns when all have.
inline void run_parts(int threads, const std::function<void(int)>& part) {
  std::vector<std::thread> workers;
  for (int p = 1; p < threads; ++p) workers.emplace_back(part, p);
  part(0);
  for (auto& w : workers) w.join();
}

}  // namespace kvlayout::bench
