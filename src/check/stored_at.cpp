#include "check/stored_at.hpp"

#include <stdexcept>

namespace kvlayout::check {
// Placeholder until the inverse lands (being written now); never reached by a test.
StoredAt stored_at(const layout::BoundLayout&, const layout::BlockTables&, int, std::int64_t, std::int64_t,
                   const prove::ProveOptions&) {
  throw std::logic_error("stored_at: not yet implemented");
}
}  // namespace kvlayout::check
