#pragma once
// Results of the obligations that depend on one layout only (in-bounds, injective, padding), kept across
// the many pairs a layout takes part in (a matrix of n layouts proves each side 2n times). What is kept
// is the outcome and each counterexample's coordinates and block tables; the pair-specific parts (the
// other side's address) are rebuilt for every pair. Thread-safe.
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "layout/block_tables.hpp"
#include "verdict/obligation.hpp"

namespace kvlayout::prove {

struct SideFact {
  ObligationResult result;  // as first computed (its counterexample positions are rebuilt on reuse)
  std::vector<std::pair<std::vector<std::int64_t>, layout::BlockTables>> witnesses;
};

class SideCache {
 public:
  std::optional<SideFact> find(const std::string& key) const;
  void store(const std::string& key, SideFact fact);

 private:
  mutable std::mutex mutex_;
  std::map<std::string, SideFact> facts_;
};

}  // namespace kvlayout::prove
