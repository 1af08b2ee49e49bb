#pragma once
// How a proof runs: solver limits, where to write queries, and test-only switches.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>

namespace kvlayout::prove {

class SideCache;

struct ProveOptions {
  // Per solver query. Enforced by Z3's deterministic resource limit (rlimit, scaled from milliseconds)
  // and a wall-clock watchdog that interrupts the solver; a limit reached is UNKNOWN, never a grade.
  std::int64_t limit_ms = 5000;
  // Z3's own memory bound (MiB); exceeding it is UNKNOWN.
  unsigned memory_mb = 512;
  // Write every solver query as SMT-LIB2 here (with a header naming pair, obligation and answer).
  std::optional<std::string> smt_dir;
  // Test-only: obligations named here are not checked (reported as skipped). Used by the controls that
  // show each obligation is what catches its known-bad pair; never set by the CLI's documented flags.
  std::set<std::string> disabled;
  // Test-only: false sends every question the exact normaliser would settle (intervals, index recovery,
  // stride checks, domain cells) to the solver instead, so tests can check the two always agree.
  bool normalise = true;
  // Called before each obligation of a proof (done of total, its name and side), for progress on a
  // terminal; null: nothing is reported.
  std::function<void(const std::string& obligation, std::size_t done, std::size_t total)> progress;
  // Shared across the proofs of a campaign: per-side results computed once per layout and cache shape.
  std::shared_ptr<SideCache> side_cache;
};

}  // namespace kvlayout::prove
