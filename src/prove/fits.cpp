// fits: the pair holds one content, and each layout's requirements hold on the cache shape. Decided
// exactly by evaluating the requirements on the concrete cache shape (no solver needed).
#include "prove/obligations.hpp"

namespace kvlayout::prove {
namespace {

std::string describe(const spec::Content& c) {
  std::string s = c.name + " (";
  for (std::size_t i = 0; i < c.coords.size(); ++i) s += (i ? ", " : "") + c.coords[i].name;
  return s + ")";
}

}  // namespace

ObligationResult check_content(const spec::Layout& source, const spec::Layout& target) {
  ObligationResult r;
  r.name = "fits";
  r.side = Side::Pair;
  r.method = "declaration";
  bool same = source.content.name == target.content.name && source.content.coords.size() == target.content.coords.size();
  for (std::size_t i = 0; same && i < source.content.coords.size(); ++i)
    same = source.content.coords[i].name == target.content.coords[i].name;
  if (same) {
    r.detail = "both hold " + describe(source.content);
    return r;
  }
  r.status = Status::Refuted;
  r.reason = Reason::ContentMismatch;
  r.detail = source.name + " holds " + describe(source.content) + "; " + target.name + " holds " + describe(target.content);
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
