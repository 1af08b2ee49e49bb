#include "prove/side_cache.hpp"

namespace kvlayout::prove {

std::optional<SideFact> SideCache::find(const std::string& key) const {
  std::lock_guard lock(mutex_);
  auto it = facts_.find(key);
  if (it == facts_.end()) return std::nullopt;
  return it->second;
}

void SideCache::store(const std::string& key, SideFact fact) {
  std::lock_guard lock(mutex_);
  facts_.emplace(key, std::move(fact));
}

}  // namespace kvlayout::prove
