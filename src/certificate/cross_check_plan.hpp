#pragma once
// Where each row of the matrix is cross-checked: on the matrix's cross-check shape (`small`) when both
// layouts fit it, else on a shape derived for the pair (enumerate::cross_check_shape), else nowhere, and
// then the row says why. Every layout is enumerated once per shape it is cross-checked on, shared by all
// its rows there, before any row runs.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "enumerate/cross_check.hpp"
#include "spec/cache_shape.hpp"
#include "spec/layout.hpp"

namespace kvlayout::certificate {

struct CrossCheckPlan {
  std::vector<std::string> shape;                      // per row (source-major): the shape, or empty
  std::vector<std::string> why_not;                    // per row: why there is no shape (when empty)
  std::map<std::string, spec::CacheShape> derived;     // shapes derived for some pair, by name
  std::map<std::pair<std::string, std::size_t>, enumerate::Enumerated> enumerated;  // (shape, layout)

  const enumerate::Enumerated& at(const std::string& shape, std::size_t layout) const {
    return enumerated.at({shape, layout});
  }
};

// Rows that `row_wanted` rejects (those outside a --sample) get neither a shape nor a reason, and no
// enumeration is done for them: a derived shape is enumerated only for the rows that use it.
// @post for every wanted row i with a shape, both its layouts are in `enumerated` on that shape; every
//       layout is in `enumerated` on `small`.
// Throws SpecError for a declaration that cannot be bound on `small`, or a `small` too large to enumerate.
CrossCheckPlan plan_cross_checks(const std::vector<std::shared_ptr<const spec::Layout>>& layouts,
                                 const spec::CacheShape& small,
                                 const std::function<const spec::CacheShape&(std::size_t, std::size_t)>& proof_shape,
                                 const std::function<bool(std::size_t row)>& row_wanted, int jobs);

}  // namespace kvlayout::certificate
