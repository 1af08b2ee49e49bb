#include "prove/capability.hpp"

#include "layout/domain_cells.hpp"
#include "spec/error.hpp"

namespace kvlayout::prove {
namespace {

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

// For a shard with tp_size/tp_rank parameters: which of its other ranks hold positions that `reference`
// holds and the shard lacks, each described by the values they span. Empty when it is not a TP shard.
std::vector<std::string> ranks_holding(const layout::BoundLayout& shard, const layout::BoundLayout& reference,
                                       const layout::Overrides& overrides) {
  std::vector<std::string> out;
  auto size = shard.values.find("tp_size");
  auto rank = shard.values.find("tp_rank");
  if (size == shard.values.end() || rank == shard.values.end()) return out;
  for (std::int64_t r = 0; r < size->second; ++r) {
    if (r == rank->second) continue;
    layout::Overrides o = overrides;
    o["tp_rank"] = r;
    try {
      layout::BoundLayout other = layout::bind(shard.layout, shard.cache, o);
      if (!other.fits()) continue;
      auto set = layout::describe_positions(shard, {layout::held_predicate(reference), layout::held_predicate(shard), layout::held_predicate(other)},
                                    [](const std::vector<bool>& t) { return t[0] && !t[1] && t[2]; });
      if (set && set->count > 0)
        out.push_back("tp_rank " + std::to_string(r) + " holds " + (set->spans.empty() ? "them" : join(set->spans, ", ")));
    } catch (const spec::SpecError&) {
    }
  }
  return out;
}

// For a thin instance of a rank family: how to ask the group question instead.
std::string group_hint(const spec::Layout& l) {
  if (l.instance_of.empty()) return "";
  return "; or prove the whole group: the family " + l.instance_of + " with --source-param/--target-param";
}

std::string scale_text(const std::optional<spec::ScaleDecl>& s) {
  if (!s) return "none";
  return spec::dtype_name(s->dtype) + " per (" + join(s->per, ", ") + ")";
}

}  // namespace

std::string capability(const Proof& proof, const layout::BoundLayout& source, const layout::BoundLayout& target,
                       const layout::Overrides& overrides) {
  const ObligationResult* d = proof.deciding();
  const spec::Layout& S = *proof.source_layout;
  const spec::Layout& T = *proof.target_layout;
  switch (proof.reason) {
    case Reason::ContentMismatch:
      if (S.content.name == "mla-latent" && T.content.name == "kv-heads")
        return "decompress the MLA latent into per-head K/V with the model's kv_b_proj weights "
               "(K_nope = c_kv * W_UK and V = c_kv * W_UV per head, k_pe broadcast to every head): a computation, "
               "not a relayout";
      if (S.content.name == "kv-heads" && T.content.name == "mla-latent")
        return "recompute the cache with the MLA model: per-head K/V cannot be turned back into the compressed "
               "latent exactly";
      return "a conversion from " + S.content.name + " content to " + T.content.name + " content (not a relayout)";
    case Reason::DoesNotFit: {
      const std::string& who = d && d->side == Side::Target ? T.name : S.name;
      const layout::BoundLayout& b = d && d->side == Side::Target ? target : source;
      std::string what = b.misfits.empty() ? "its requirements" : b.misfits.front().what;
      return "a cache shape on which " + who + " fits (" + what + "), or fix the declaration of " + who +
             " if the requirement is wrong";
    }
    case Reason::OutOfBounds:
    case Reason::Collision:
      return "fix the declaration of " + (d && d->side == Side::Target ? T.name : S.name);
    case Reason::MissingPositions: {
      std::vector<std::string> ranks = ranks_holding(source, target, overrides);
      std::string missing = d && d->counterexample ? join(d->counterexample->details, ", ") : "";
      if (!ranks.empty())
        return "gather the other tensor-parallel ranks of " + S.name + " (" + join(ranks, "; ") + ")" +
               (missing.empty() ? "" : ": " + T.name + " needs " + missing) + group_hint(S);
      return "a source that also holds " + (missing.empty() ? "the positions " + T.name + " needs" : missing);
    }
    case Reason::DroppedPositions: {
      std::vector<std::string> ranks = ranks_holding(target, source, overrides);
      std::string dropped = d && d->counterexample ? join(d->counterexample->details, ", ") : "";
      if (!ranks.empty())
        return "move the dropped positions to the other tensor-parallel ranks of " + T.name + " (" + join(ranks, "; ") + ")" +
               group_hint(T);
      return "a target that also holds " + (dropped.empty() ? "the positions " + S.name + " holds" : dropped);
    }
    case Reason::LossyValues:
      return "keep the element type " + spec::dtype_name(S.dtype) + " in the target, or accept the rounding "
             "(kvlayout emit --allow-not-exact)";
    case Reason::ScaleMismatch:
      return "keep the quantisation scales with the cache (source: " + scale_text(S.scale) + "; target: " +
             scale_text(T.scale) + ")";
    case Reason::SolverLimit:
      return "a larger --limit-ms (the solver stopped" + (d ? " on " + d->name + "(" + side_name(d->side) + ")" : std::string()) + ")";
    case Reason::Exact:
    case Reason::Padding:
      return "";
  }
  return "";
}

}  // namespace kvlayout::prove
