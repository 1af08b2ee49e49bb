#pragma once
// Work spread over threads: work(i) for every i in [0, n), `jobs` at a time. An exception thrown by any
// work item (bad input found mid-campaign) stops the handing out of further items and is rethrown on the
// calling thread once every thread has finished, never terminating the process.
#include <cstddef>
#include <functional>
#include <string>

namespace kvlayout::certificate {

void parallel_for(std::size_t n, int jobs, const std::function<void(std::size_t)>& work,
                  const std::function<void(std::size_t done, std::size_t total)>& progress = nullptr);

// A parallel_for progress callback reporting `phase` through a campaign's progress (none when null).
std::function<void(std::size_t, std::size_t)> phase_progress(
    const std::function<void(const std::string&, std::size_t, std::size_t)>& progress, const std::string& phase);

}  // namespace kvlayout::certificate
