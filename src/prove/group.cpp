// prove_group: a group translation graded in named phases (see group.hpp):
//   1. instances  each instance of both groups proven on its own (fits, defined, in-bounds, injective,
//                 and padding on the source side);
//   2. cells      the assignment, uncovered and dropped positions, exactly from the domain cells;
//   3. group      covers(group) and carries(group) from the cells (or the solver, when the ownership
//                 rules are not boxes);
//   4. pieces     each assigned (source instance -> target instance restricted to its box) proven as a
//                 pair: fits, covers (the assignment is right), values.
// @post the grade is grade_of(every result) and nothing is counted exact that a phase did not prove.
#include "prove/group.hpp"

#include <algorithm>
#include <chrono>

#include "expr/parse.hpp"
#include "layout/content_match.hpp"
#include "layout/domain_cells.hpp"
#include "prove/encoder.hpp"
#include "prove/group_assignment.hpp"
#include "prove/internal_error.hpp"
#include "prove/model.hpp"
#include "prove/pair.hpp"
#include "prove/session.hpp"
#include "prove/side_cache.hpp"

namespace kvlayout::prove {
namespace {

class GroupRun {
 public:
  GroupRun(const layout::Group& source, const layout::Group& target, const spec::CacheShape& cache,
           const ProveOptions& options, const layout::Overrides& overrides)
      : cache_(cache), options_(options), overrides_(overrides) {
    out_.source = source;
    out_.target = target;
    if (!options_.side_cache) options_.side_cache = std::make_shared<SideCache>();
    out_.proof.source_layout = source.declaration;
    out_.proof.target_layout = target.declaration;
    out_.proof.cache = cache;
    out_.proof.obligations.reserve(64);
  }

  GroupProof run() {
    auto start = std::chrono::steady_clock::now();
    prove_instances();
    if (same_content() && all_fit_) {
      prove_group_obligations();
      prove_pieces();
    } else {
      for (const char* name : {"covers", "carries"})
        out_.proof.skipped.push_back({name, Side::Pair, all_fit_ ? "fits(pair) refuted" : "an instance does not fit"});
    }
    finish();
    out_.proof.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return std::move(out_);
  }

 private:
  std::string word(Side side) const { return side == Side::Source ? "source" : "target"; }
  // "source rank 1", or "source" for a whole layout (a group of one).
  std::string who(Side side, std::size_t member) const {
    return group(side).who(member, word(side));
  }
  const layout::Group& group(Side side) const { return side == Side::Source ? out_.source : out_.target; }

  void add(ObligationResult r, const std::string& instance) {
    if (!instance.empty()) {
      r.detail = instance + ": " + r.detail;
      if (r.counterexample) r.counterexample->summary = instance + ": " + r.counterexample->summary;
    }
    out_.proof.obligations.push_back(std::move(r));
    out_.proof.instances.push_back(instance);
  }

  // Phase 1. Each instance as the source side of the pair (instance, instance): its own facts.
  void prove_instances() {
    for (Side side : {Side::Source, Side::Target}) {
      const layout::Group& g = group(side);
      for (std::size_t m = 0; m < g.members.size(); ++m) {
        Proof self = prove(g.members[m].layout, g.members[m].layout, cache_, options_, overrides_);
        out_.proof.queries += self.queries;
        const std::string label = who(side, m);
        auto take = [&](const ObligationResult& r, bool precondition) {
          if (r.side != Side::Source) return;
          if (side == Side::Target && r.name == "padding") return;  // a target's padding is not the move's
          ObligationResult copy = r;
          copy.side = side;
          if (precondition) {
            copy.detail = label + ": " + copy.detail;
            out_.proof.preconditions.push_back(copy);
          } else {
            add(copy, label);
          }
        };
        for (const auto& r : self.preconditions) take(r, true);
        for (const auto& r : self.obligations) take(r, false);
        for (const auto& s : self.skipped)
          if (s.side == Side::Source) out_.proof.skipped.push_back({s.name, side, label + ": " + s.because});
        auto bound = side == Side::Source ? self.source_bound : self.target_bound;
        all_fit_ = all_fit_ && bound->fits();
        (side == Side::Source ? source_bound_ : target_bound_).push_back(bound);
      }
    }
    out_.proof.source_bound = source_bound_.front();
    out_.proof.target_bound = target_bound_.front();
  }

  // fits(pair), listed first as a pair proof lists it (so that, among equally bad findings, the content
  // mismatch names the reason, as it does for a pair).
  bool same_content() {
    Pair pair{*source_bound_.front(), *target_bound_.front()};
    ObligationResult r;
    r.name = "fits";
    r.side = Side::Pair;
    r.method = "declaration";
    if (pair.same_content()) {
      r.detail = "both groups hold " + out_.source.declaration->content.name + " with the same coordinates and extents";
      add(r, "");
      move_last_to_front();
      return true;
    }
    r.status = Status::Refuted;
    r.reason = Reason::ContentMismatch;
    r.detail = *layout::content_mismatch(pair.source, pair.target);
    Counterexample c;
    c.summary = r.detail;
    r.counterexample = c;
    add(r, "");
    move_last_to_front();
    return false;
  }

  void move_last_to_front() {
    auto& o = out_.proof.obligations;
    auto& i = out_.proof.instances;
    std::rotate(o.begin(), o.end() - 1, o.end());
    std::rotate(i.begin(), i.end() - 1, i.end());
  }

  std::vector<const layout::BoundLayout*> bounds(Side side) const {
    std::vector<const layout::BoundLayout*> out;
    for (const auto& b : side == Side::Source ? source_bound_ : target_bound_) out.push_back(b.get());
    return out;
  }

  // A position of one instance, located on a representative of the other side (for the report).
  PositionWitness witness(Side has, std::size_t member, const std::vector<std::int64_t>& coord) const {
    const layout::BoundLayout& h = *(has == Side::Source ? source_bound_ : target_bound_)[member];
    const layout::BoundLayout& other = *(has == Side::Source ? target_bound_ : source_bound_).front();
    Pair pair = has == Side::Source ? Pair{h, other} : Pair{other, h};
    return make_witness(pair, coord);
  }

  // Phase 2 and 3: the cells, then covers(group) and carries(group).
  void prove_group_obligations() {
    auto start = std::chrono::steady_clock::now();
    cells_ = group_cells(bounds(Side::Source), bounds(Side::Target));
    const double cells_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    // The cells decide covers and carries exactly; with the normaliser switched off (a test switch) the
    // solver decides them instead, so that the two can be compared.
    const bool by_cells = cells_ && options_.normalise;
    for (bool covers : {true, false}) {
      ObligationResult r = by_cells ? from_cells(covers) : by_solver(covers);
      if (by_cells) r.ms = cells_ms / 2;
      add(std::move(r), "group");
    }
    if (cells_ && cells_->split && !cells_->uncovered) {
      ObligationResult r;
      r.name = "assignment";
      r.side = Side::Pair;
      r.method = "domain cells";
      set_solver_limit(r, "the ownership rules depend on coordinates other than (layer, head)");
      const auto& [q, coord] = *cells_->split;
      r.detail = "every position " + who(Side::Target, q) + " holds at " +
                 layout::format_coordinate(*target_bound_[q], coord) +
                 " has a source instance, but no single one holds its whole (layer, head) box; kvlayout assigns by box";
      add(std::move(r), who(Side::Target, q));
    }
    if (cells_) out_.assignment = cells_->assignment;
  }

  ObligationResult subset_result(bool covers) const {
    ObligationResult r;
    r.name = covers ? "covers" : "carries";
    r.side = Side::Pair;
    r.method = "domain cells";
    return r;
  }

  ObligationResult refute(ObligationResult r, bool covers, std::size_t member, const std::vector<std::int64_t>& coord,
                          std::optional<std::int64_t> count) const {
    const Side has = covers ? Side::Target : Side::Source;
    const layout::BoundLayout& h = *(has == Side::Source ? source_bound_ : target_bound_)[member];
    PositionWitness w = witness(has, member, coord);
    const auto& placement = has == Side::Source ? w.source : w.target;
    if (!placement || placement->placement == layout::Placement::NotHeld)
      throw InternalError(r.name + "(group) counterexample " + layout::format_coordinate(h, coord) + " does not reproduce");
    const std::string holder = who(has, member);
    const std::string other = covers ? "source" : "target";
    r.status = Status::Refuted;
    r.reason = covers ? Reason::MissingPositions : Reason::DroppedPositions;
    std::string n = count ? std::to_string(*count) + " positions" : "positions";
    r.detail = covers ? "target instances hold " + n + " that no source instance holds"
                      : "source instances hold " + n + " that no target instance holds";
    Counterexample c;
    c.summary = layout::format_coordinate(h, coord) + " is held by " + holder + ", by no " + other + " instance";
    c.count = count;
    c.positions.push_back(std::move(w));
    r.counterexample = c;
    return r;
  }

  ObligationResult from_cells(bool covers) const {
    ObligationResult r = subset_result(covers);
    const auto& where = covers ? cells_->uncovered : cells_->dropped;
    if (!where) {
      r.detail = covers ? "every position a target instance holds, some source instance holds"
                        : "every position a source instance holds, some target instance holds";
      return r;
    }
    return refute(r, covers, where->first, where->second, covers ? cells_->uncovered_count : cells_->dropped_count);
  }

  // One query per instance of the side that must be contained: held there, held by no instance of the
  // other side.
  ObligationResult by_solver(bool covers) {
    ObligationResult r = subset_result(covers);
    r.method = "z3";
    const Side has = covers ? Side::Target : Side::Source;
    auto& mine = has == Side::Source ? source_bound_ : target_bound_;
    auto& theirs = has == Side::Source ? target_bound_ : source_bound_;
    Session session(options_, out_.proof.source_layout->name + " -> " + out_.proof.target_layout->name + " (group)",
                    out_.proof.source_layout->name + "__" + out_.proof.target_layout->name + "__group");
    for (std::size_t m = 0; m < mine.size(); ++m) {
      Encoder enc(session.ctx(), *mine[m], "H");
      std::vector<Encoder> others;
      others.reserve(theirs.size());
      for (std::size_t o = 0; o < theirs.size(); ++o) others.emplace_back(session.ctx(), *theirs[o], "O" + std::to_string(o));
      SymbolicPosition x = enc.position("x");
      z3::expr none = session.ctx().bool_val(true);
      for (auto& o : others) none = none && !o.held(x);
      Query s(session, r.name);
      s.add(enc.in_box(x) && enc.held(x) && none);
      Answer a = s.check();
      out_.proof.queries += 1;
      if (a == Answer::Unknown) {
        set_solver_limit(r, s.unknown_reason());
        return r;
      }
      if (a == Answer::Sat) {
        z3::model model = minimise(s, x.coords);
        return refute(r, covers, m, model_coords(model, x), std::nullopt);
      }
    }
    r.detail = covers ? "every position a target instance holds, some source instance holds"
                      : "every position a source instance holds, some target instance holds";
    if (!cells_) {
      // Without cells there is no assignment by box: the move exists, kvlayout cannot say who feeds whom.
      r.detail += " (ownership rules are not boxes: no assignment)";
    }
    return r;
  }

  // Phase 4: each assigned piece as a pair.
  void prove_pieces() {
    if (!cells_) {
      ObligationResult r;
      r.name = "assignment";
      r.side = Side::Pair;
      r.method = "domain cells";
      set_solver_limit(r, "the ownership rules are not combinations of single-coordinate bounds");
      r.detail = "kvlayout assigns source to target instances by (layer, head) boxes of the domain cells";
      add(std::move(r), "group");
      return;
    }
    bool values_done = false;
    for (const RankAssignment& a : out_.assignment) {
      auto piece = assigned_piece(out_.source, out_.target, a);
      out_.pieces.push_back(prove(out_.source.members[a.source_member].layout, piece, cache_, options_, overrides_));
      const Proof& p = out_.pieces.back();
      out_.proof.queries += p.queries;
      const std::string label = who(Side::Target, a.target_member) + " <- " + who(Side::Source, a.source_member);
      for (const auto& r : p.obligations) {
        if (r.side != Side::Pair) continue;
        if (r.name == "covers") add(r, label);
        if (r.name == "values" && !values_done) {
          add(r, "");
          values_done = true;
        }
      }
    }
    // No piece (nothing assigned): the element types are still compared, on the first instances.
    if (!values_done) {
      Proof p = prove(out_.source.members.front().layout, out_.target.members.front().layout, cache_, options_, overrides_);
      for (const auto& r : p.obligations)
        if (r.name == "values") add(r, "");
    }
  }

  void finish() {
    std::vector<ObligationResult> all = out_.proof.preconditions;
    all.insert(all.end(), out_.proof.obligations.begin(), out_.proof.obligations.end());
    std::tie(out_.proof.grade, out_.proof.reason) = grade_of(all);
    if (is_exact(out_.proof.grade)) return;
    const ObligationResult* d = out_.proof.deciding();
    std::string where;
    for (std::size_t i = 0; i < out_.proof.obligations.size(); ++i)
      if (&out_.proof.obligations[i] == d) where = out_.proof.instances[i];
    switch (out_.proof.reason) {
      case Reason::MissingPositions:
        out_.proof.unblocked_by = "a source group whose ranks together hold every position the target ranks hold "
                                  "(or fix the ownership rule in the declaration's holds)";
        break;
      case Reason::DroppedPositions:
        out_.proof.unblocked_by = "a target group whose ranks together hold every position of the source group";
        break;
      case Reason::SolverLimit:
        out_.proof.unblocked_by = "a larger --limit-ms, or ownership rules that are boxes in (layer, head)";
        break;
      default:
        out_.proof.unblocked_by = "fix the declaration" + (where.empty() ? std::string() : " (" + where + ")");
    }
  }

  spec::CacheShape cache_;
  ProveOptions options_;
  layout::Overrides overrides_;
  GroupProof out_;
  bool all_fit_ = true;
  std::vector<std::shared_ptr<const layout::BoundLayout>> source_bound_, target_bound_;
  std::optional<GroupCells> cells_;
};

}  // namespace

GroupProof prove_group(const layout::Group& source, const layout::Group& target, const spec::CacheShape& cache,
                       const ProveOptions& options, const layout::Overrides& overrides) {
  return GroupRun(source, target, cache, options, overrides).run();
}

std::shared_ptr<const spec::Layout> assigned_piece(const layout::Group& source, const layout::Group& target,
                                                   const RankAssignment& a) {
  const spec::Layout& t = *target.members.at(a.target_member).layout;
  auto piece = std::make_shared<spec::Layout>(t);
  std::string box;
  auto bound = [&](const std::string& coord, const std::optional<RankRange>& r) {
    if (!r) return;
    box += (box.empty() ? "" : " && ") + coord + " >= " + std::to_string(r->first) + " && " + coord + " < " +
           std::to_string(r->end);
  };
  bound("layer", a.layers);
  bound("head", a.heads);
  if (box.empty()) box = "1 == 1";
  std::string text = t.holds ? "(" + t.holds->text + ") && (" + box + ")" : box;
  piece->holds = spec::SourceExpr{expr::parse(text), "/holds", text};
  const auto& s = source.members.at(a.source_member);
  std::string from;
  for (const auto& [name, value] : s.rank) from += (from.empty() ? "" : ",") + name + "=" + std::to_string(value);
  piece->name = t.name + "<-[" + (from.empty() ? source.declaration->name : from) + "]";
  return piece;
}

}  // namespace kvlayout::prove
