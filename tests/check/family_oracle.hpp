#pragma once
// The enumeration oracle for family plans (tests only; header-only because the test binary globs only
// *_test.cpp): under concrete tables, instantiate every member, copy bytes between buffers whose source
// bytes are tagged with (position, byte within element), and compare every target byte with what
// layout::locate says it must hold. Returns every verdict it sees (empty: the plan is right under them).
#include <climits>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "check/family_plan.hpp"
#include "check/verdict.hpp"
#include "expr/evaluate.hpp"
#include "layout/address.hpp"
#include "layout/block_tables.hpp"
#include "layout/bound_layout.hpp"

namespace kvlayout::test {

using Buffers = std::map<std::pair<int, std::int64_t>, std::vector<std::int64_t>>;  // (tensor, instance) -> per byte

constexpr std::int64_t kUnwritten = INT64_MIN;

// Every byte of every instance: the tag (position index * element bytes + byte) stored there, or a negative
// tag (padding): -1 everywhere when `unique_padding` is false, else a distinct one per byte (so that two
// padding bytes of the source are told apart when written to one target byte).
// `real_extents` (when given) marks the positions of `b` inside them as real, the others (the slack of a
// partial last block, when `b` is bound with whole blocks) as not.
inline Buffers tagged_storage(const layout::BoundLayout& b, const layout::BlockTables& tables, std::vector<bool>* in_scope = nullptr,
                              const std::optional<expr::Expr>& scope = std::nullopt, bool unique_padding = false,
                              std::vector<bool>* real = nullptr, const std::vector<std::int64_t>* real_extents = nullptr) {
  Buffers out;
  const std::int64_t eb = b.element_bytes();
  std::int64_t pad = -2;
  for (std::size_t t = 0; t < b.tensors.size(); ++t)
    for (std::int64_t i = 0; i < b.tensors[t].instances; ++i) {
      auto& bytes = out[{static_cast<int>(t), i}];
      bytes.assign(static_cast<std::size_t>(b.tensors[t].size * eb), -1);
      if (unique_padding)
        for (auto& v : bytes) v = pad--;
    }
  std::vector<std::int64_t> x(b.coord_extents.size(), 0);
  for (std::int64_t index = 0;; ++index) {
    layout::Location l = layout::locate(b, x, tables);
    if (l.placement == layout::Placement::Held)
      for (std::int64_t j = 0; j < eb; ++j)
        out[{l.address.tensor, l.address.instance}][static_cast<std::size_t>(l.address.offset * eb + j)] = index * eb + j;
    if (in_scope) {
      expr::Environment env{x, [&](int tb, std::int64_t e) { return tables.entry(static_cast<std::size_t>(tb), e); }};
      in_scope->push_back(!scope || expr::evaluate(*scope, env) != 0);
    }
    if (real) {
      bool inside = true;
      for (std::size_t k = 0; real_extents && k < x.size(); ++k) inside = inside && x[k] < (*real_extents)[k];
      real->push_back(inside);
    }
    std::size_t k = x.size();
    while (k-- > 0) {
      if (++x[k] < b.coord_extents[k]) break;
      x[k] = 0;
    }
    if (k == static_cast<std::size_t>(-1)) break;
  }
  return out;
}

// The same layouts bound with whole blocks (`whole_source`, `whole_target`: the slack of a partial last
// block is held there), or nullptr: then there is no slack. The descriptors form's rules, which the
// families checker follows: a byte written twice is ALIASED only from different source bytes; a slack byte
// may be written with its own source slack byte where the scope holds, never required; any other write
// to padding or out of scope is FRAME_VIOLATION.
inline std::set<check::Verdict> simulate_families(const layout::BoundLayout& source, const layout::BoundLayout& target,
                                                  const check::FamilyPlan& plan, const layout::BlockTables& source_tables,
                                                  const layout::BlockTables& target_tables,
                                                  const layout::BoundLayout* whole_source = nullptr,
                                                  const layout::BoundLayout* whole_target = nullptr) {
  std::set<check::Verdict> found;
  if (source.layout->dtype != target.layout->dtype) return {check::Verdict::ValueChange};
  const std::int64_t eb = target.element_bytes();
  const bool whole = whole_source && whole_target;
  Buffers src = tagged_storage(whole ? *whole_source : source, source_tables, nullptr, std::nullopt, true);
  std::vector<bool> in_scope, real;
  Buffers expected = tagged_storage(whole ? *whole_target : target, target_tables, &in_scope, plan.scope, false, &real,
                                    &target.coord_extents);
  Buffers written;
  for (auto& [key, bytes] : expected) written[key].assign(bytes.size(), kUnwritten);
  for (const auto& f : plan.families) {
    std::vector<std::int64_t> v = f.first;
    bool empty = false;
    for (std::size_t i = 0; i < v.size(); ++i) empty = empty || f.first[i] >= f.end[i];
    while (!empty) {
      check::ConcreteMember m = check::evaluate_member(plan, f, v, source_tables, target_tables);
      auto s = src.find({f.source.tensor, m.source_instance});
      auto t = written.find({f.target.tensor, m.target_instance});
      if (!m.error.empty() || m.bytes < 0) {
        found.insert(check::Verdict::OutOfBounds);
      } else if (m.bytes > 0 && (s == src.end() || t == written.end() || m.source_offset < 0 || m.target_offset < 0 ||
                                 m.source_offset + m.bytes > static_cast<std::int64_t>(s->second.size()) ||
                                 m.target_offset + m.bytes > static_cast<std::int64_t>(t->second.size()))) {
        found.insert(check::Verdict::OutOfBounds);
      } else {
        for (std::int64_t k = 0; k < m.bytes; ++k) {
          auto at = static_cast<std::size_t>(m.target_offset + k);
          const std::int64_t v = s->second[static_cast<std::size_t>(m.source_offset + k)];
          if (t->second[at] != kUnwritten && t->second[at] != v) found.insert(check::Verdict::Aliased);
          t->second[at] = v;
        }
      }
      std::size_t i = v.size();
      while (i-- > 0) {
        if (++v[i] < f.end[i]) break;
        v[i] = f.first[i];
      }
      if (i == static_cast<std::size_t>(-1)) break;
    }
  }
  for (const auto& [key, want] : expected) {
    const auto& got = written[key];
    for (std::size_t b = 0; b < want.size(); ++b) {
      const auto position = static_cast<std::size_t>(want[b] >= 0 ? want[b] / eb : 0);
      const bool scoped = want[b] >= 0 && in_scope[position];
      const bool slack = want[b] >= 0 && !real[position];
      if (got[b] == kUnwritten) {
        if (scoped && !slack) found.insert(check::Verdict::Uncovered);
        continue;
      }
      if (want[b] < 0 || (slack && (got[b] != want[b] || !scoped))) {
        found.insert(check::Verdict::FrameViolation);
        continue;
      }
      if (slack) continue;  // its own slack byte, in scope: allowed
      if (got[b] != want[b]) found.insert(check::Verdict::WrongMapping);
      if (!scoped) found.insert(check::Verdict::FrameViolation);
    }
  }
  return found;
}

}  // namespace kvlayout::test
