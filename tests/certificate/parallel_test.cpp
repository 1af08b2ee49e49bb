#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "certificate/parallel.hpp"

TEST_CASE("parallel_for runs every item and rethrows a worker's exception on the caller", "[certificate][parallel]") {
  std::atomic<int> sum{0};
  kvlayout::certificate::parallel_for(100, 3, [&](std::size_t i) { sum += static_cast<int>(i); });
  CHECK(sum == 4950);
  std::atomic<int> ran{0};
  CHECK_THROWS_WITH(kvlayout::certificate::parallel_for(1000, 3,
                                                        [&](std::size_t i) {
                                                          ++ran;
                                                          if (i == 7) throw std::runtime_error("item 7 is bad");
                                                          std::this_thread::sleep_for(std::chrono::milliseconds(1));
                                                        }),
                    "item 7 is bad");
  CHECK(ran < 100);  // the rest (about a second's worth) was not handed out
}
