#include "certificate/deciding_counterexample.hpp"

#include "prove/report.hpp"

namespace kvlayout::certificate {

spec::Json deciding_counterexample(const prove::Proof& p) {
  const prove::ObligationResult* d = p.deciding();
  if (!d || prove::is_exact(p.grade)) return nullptr;
  spec::Json all = prove::to_json(p);
  // The report lists preconditions and obligations in the proof's order: the deciding one by position (a
  // group proof has several obligations of one name and side, one per instance).
  for (const auto* list : {&p.preconditions, &p.obligations})
    for (std::size_t i = 0; i < list->size(); ++i) {
      if (&(*list)[i] != d) continue;
      spec::Json c = all[list == &p.preconditions ? "preconditions" : "obligations"][i]["counterexample"];
      if (c.is_null()) c = spec::Json{{"summary", d->detail}};
      c["obligation"] = d->name + "(" + prove::side_name(d->side) + ")";
      return c;
    }
  return nullptr;
}

}  // namespace kvlayout::certificate
