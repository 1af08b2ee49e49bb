// fits: the pair holds one content (names and extents), and each layout's requirements hold on the cache shape. Decided
// exactly by evaluating the requirements on the concrete cache shape (no solver needed).
#include "layout/content_match.hpp"
#include "prove/obligations.hpp"

namespace kvlayout::prove {
ObligationResult check_content(const layout::BoundLayout& source, const layout::BoundLayout& target) {
  ObligationResult r;
  r.name = "fits";
  r.side = Side::Pair;
  r.method = "declaration";
  std::optional<std::string> mismatch = layout::content_mismatch(source, target);
  if (!mismatch) {
    r.detail = "both hold " + source.layout->content.name + " with the same coordinates and extents";
    return r;
  }
  r.status = Status::Refuted;
  r.reason = Reason::ContentMismatch;
  r.detail = *mismatch;
  Counterexample c;
  c.summary = r.detail;
  r.counterexample = c;
  return r;
}

ObligationResult check_fits(const layout::BoundLayout& bound, Side side) {
  ObligationResult r;
  r.name = "fits";
  r.side = side;
  r.method = "evaluation on the cache shape";
  if (bound.fits()) {
    r.detail = std::to_string(bound.layout->requirements.size()) + " requirement(s) hold on " + bound.cache.name;
    return r;
  }
  r.status = Status::Refuted;
  r.reason = Reason::DoesNotFit;
  r.detail = bound.layout->name + " does not fit " + bound.cache.name + ": " + bound.misfits.front().what;
  Counterexample c;
  c.summary = r.detail;
  for (const auto& m : bound.misfits) c.details.push_back(m.what + (m.path.empty() ? "" : " at " + m.path));
  r.counterexample = c;
  return r;
}

}  // namespace kvlayout::prove
