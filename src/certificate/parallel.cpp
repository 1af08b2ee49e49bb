#include "certificate/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace kvlayout::certificate {

void parallel_for(std::size_t n, int jobs, const std::function<void(std::size_t)>& work,
                  const std::function<void(std::size_t, std::size_t)>& progress) {
  std::atomic<std::size_t> next{0}, done{0};
  std::mutex mutex;
  std::exception_ptr failure;
  auto worker = [&] {
    for (std::size_t i; (i = next++) < n;) {
      try {
        work(i);
      } catch (...) {
        std::lock_guard lock(mutex);
        if (!failure) failure = std::current_exception();
        next = n;  // hand out nothing more
        return;
      }
      std::size_t d = ++done;
      if (progress) {
        std::lock_guard lock(mutex);
        progress(d, n);
      }
    }
  };
  std::vector<std::thread> threads;
  for (int j = 1; j < std::max(1, jobs); ++j) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
}

std::function<void(std::size_t, std::size_t)> phase_progress(
    const std::function<void(const std::string&, std::size_t, std::size_t)>& progress, const std::string& phase) {
  if (!progress) return nullptr;
  return [progress, phase](std::size_t done, std::size_t total) { progress(phase, done, total); };
}

}  // namespace kvlayout::certificate
