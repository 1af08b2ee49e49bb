// stored_at: which held position, if any, a layout stores at one element of one tensor instance under
// concrete block tables.
//
// The tables are concrete, but a production table has up to ~10^6 entries: asserting every entry
// (table(i) == entries[i]) costs seconds per query before the solver starts. Instead the tables stay
// uninterpreted and injective (the encoder's axioms), and are pinned lazily: whenever a model reads an
// entry, or produces a value, that disagrees with the concrete table, a lemma true of the concrete table is
// added (entry e reads entries[e]; value v comes only from the entry holding v, or from none) and the
// solver is asked again. Every lemma holds for the concrete tables, so Unsat is a proof of padding; a Sat
// model whose every read agrees with the concrete tables is a real solution (replacing the function by the
// concrete table changes no term's value). The element itself fixes the block values a view reads, so a
// handful of rounds settles a query; a cap turns a pathological case into Unknown, never a guess.
#include "check/stored_at.hpp"

#include <map>
#include <optional>

#include "layout/address.hpp"
#include "prove/encoder.hpp"
#include "prove/internal_error.hpp"
#include "prove/model.hpp"
#include "prove/session.hpp"

namespace kvlayout::check {
namespace {

constexpr int kMaxRounds = 256;

// The entry of a concrete table that holds `value`, if any. @pre the table is injective (BlockTables are).
std::optional<std::int64_t> entry_holding(const layout::BoundTable& decl, const layout::BlockTables::Table& t,
                                          std::int64_t value) {
  if (!t.identity) {
    for (std::size_t i = 0; i < t.entries.size(); ++i)
      if (t.entries[i] == value) return static_cast<std::int64_t>(i);
    return std::nullopt;
  }
  for (const auto& [entry, v] : t.overrides)
    if (v == value) return entry;
  std::int64_t i = value - t.first;
  if (i < 0 || i >= decl.length || t.overrides.count(i)) return std::nullopt;
  return i;
}

// The condition "some view of `tensor` stores x, at (instance, element), with every index inside its axis
// and every table read inside its table" — the concrete evaluator's Held at that address.
z3::expr stored_here(prove::Encoder& enc, int tensor, std::int64_t instance, std::int64_t element,
                     const prove::SymbolicPosition& x) {
  z3::context& ctx = enc.ctx();
  const auto ti = static_cast<std::size_t>(tensor);
  z3::expr any = ctx.bool_val(false);
  for (std::size_t v = 0; v < enc.bound().tensors[ti].views.size(); ++v) {
    const std::size_t first_lookup = enc.lookups().size();
    z3::expr here = enc.view_domain(ti, v, x) && enc.within_axes(ti, v, x) &&
                    enc.instance(ti, x) == ctx.int_val(static_cast<int64_t>(instance)) &&
                    enc.offset(ti, v, x) == ctx.int_val(static_cast<int64_t>(element));
    any = any || (here && !enc.entry_outside_table(first_lookup));
  }
  return any;
}

// Lemmas for every read of the model that disagrees with the concrete tables; empty when none does.
std::vector<z3::expr> disagreements(prove::Encoder& enc, const z3::model& m, const layout::BlockTables& tables) {
  std::vector<z3::expr> lemmas;
  z3::context& ctx = enc.ctx();
  for (const auto& l : enc.lookups()) {
    const auto t = static_cast<std::size_t>(l.table);
    const auto& decl = enc.bound().tables[t];
    const std::int64_t entry = prove::model_int(m, l.entry);
    const std::int64_t value = prove::model_int(m, l.value);
    if (entry < 0 || entry >= decl.length) continue;  // an out-of-table read: the query excludes it
    const std::int64_t truth = tables.entry(t, entry);
    if (truth == value) continue;
    z3::expr e = ctx.int_val(static_cast<int64_t>(entry));
    lemmas.push_back(z3::implies(l.entry == e, l.value == ctx.int_val(static_cast<int64_t>(truth))));
    z3::expr v = ctx.int_val(static_cast<int64_t>(value));
    if (auto holder = entry_holding(decl, tables.tables[t], value))
      lemmas.push_back(z3::implies(l.value == v, l.entry == ctx.int_val(static_cast<int64_t>(*holder))));
    else
      lemmas.push_back(z3::implies(l.entry >= 0 && l.entry < ctx.int_val(static_cast<int64_t>(decl.length)), l.value != v));
  }
  return lemmas;
}

}  // namespace

StoredAt stored_at(const layout::BoundLayout& bound, const layout::BlockTables& tables, int tensor,
                   std::int64_t instance, std::int64_t element, const prove::ProveOptions& options) {
  StoredAt out;
  const auto& t = bound.tensors.at(static_cast<std::size_t>(tensor));
  // Phase 1: outside the allocation no solver is needed (the sizes come from the view algebra via bind).
  if (instance < 0 || instance >= t.instances || element < 0 || element >= t.size) {
    out.kind = StoredAt::Kind::PastAllocation;
    out.detail = t.name + " has " + std::to_string(t.instances) + " instance(s) of " + std::to_string(t.size) +
                 " element(s)";
    return out;
  }
  // Phase 2: the inverse query with lazily pinned tables.
  prove::Session session(options, bound.layout->name + " at " + t.name + "[" + std::to_string(instance) + "] element " +
                                      std::to_string(element),
                         bound.layout->name + "__stored_at");
  prove::Encoder enc(session.ctx(), bound, "R");
  prove::SymbolicPosition x = enc.position("x");
  z3::expr goal = stored_here(enc, tensor, instance, element, x);
  prove::Query q(session, "stored at " + t.name + "[" + std::to_string(instance) + "] element " + std::to_string(element));
  q.add(enc.in_box(x) && goal && enc.table_axioms());
  for (int round = 0; round < kMaxRounds; ++round) {
    prove::Answer a = q.check();
    if (a == prove::Answer::Unsat) {
      out.kind = StoredAt::Kind::Padding;
      return out;
    }
    if (a == prove::Answer::Unknown) {
      out.detail = "the solver gave no answer (" + q.unknown_reason() + ")";
      return out;
    }
    z3::model m = q.model();
    std::vector<z3::expr> lemmas = disagreements(enc, m, tables);
    if (!lemmas.empty()) {
      for (const auto& l : lemmas) q.add(l);
      continue;
    }
    // Phase 3: a real solution. Minimise it for reading (an aliasing layout stores several positions at
    // one element); a minimised model that reads the tables otherwise than the concrete ones is dropped.
    z3::model small = prove::minimise(q, x.coords);
    if (disagreements(enc, small, tables).empty()) m = small;
    // The concrete evaluator must agree.
    out.coord = prove::model_coords(m, x);
    out.location = layout::locate(bound, out.coord, tables);
    const auto& a_ = out.location.address;
    if (out.location.placement != layout::Placement::Held || a_.tensor != tensor || a_.instance != instance ||
        a_.offset != element)
      throw prove::InternalError("stored_at: " + layout::format_coordinate(bound, out.coord) + " is not stored at " +
                                 t.name + "[" + std::to_string(instance) + "] element " + std::to_string(element) +
                                 " by the concrete evaluator");
    out.kind = StoredAt::Kind::Position;
    return out;
  }
  out.detail = "the block tables were not pinned within " + std::to_string(kMaxRounds) + " rounds";
  return out;
}

}  // namespace kvlayout::check
