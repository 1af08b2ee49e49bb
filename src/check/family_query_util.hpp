#pragma once
// Small helpers shared by the families plan's solver questions (family_bounds.cpp, family_mapping.cpp):
// constants, the concrete out-of-bounds test, result building, and the "member byte k lands in the element
// of target position x" encoding with its concrete re-check.
#include <string>
#include <vector>
#include <z3++.h>

#include "check/family_checks.hpp"
#include "check/family_encoding.hpp"
#include "expr/arithmetic.hpp"
#include "layout/address.hpp"

namespace kvlayout::check::family_util {

using prove::Answer;

inline z3::expr ival(z3::context& c, std::int64_t v) { return c.int_val(static_cast<int64_t>(v)); }

inline std::int64_t allocation_bytes(const layout::BoundLayout& b, int tensor) {
  return expr::checked_mul(b.tensors[static_cast<std::size_t>(tensor)].size, b.element_bytes());
}

inline CheckResult found(Verdict v, std::string message, nlohmann::json counterexample, std::vector<std::string> details) {
  CheckResult r;
  r.verdict = v;
  r.message = std::move(message);
  r.counterexample = std::move(counterexample);
  r.details = std::move(details);
  return r;
}

inline nlohmann::json side_json(const layout::BoundLayout& b, int tensor, std::int64_t instance, std::int64_t offset, std::int64_t bytes) {
  return {{"tensor", b.tensors[static_cast<std::size_t>(tensor)].name}, {"instance", instance}, {"offset", offset},
          {"bytes", bytes}, {"allocation", allocation_bytes(b, tensor)}, {"instances", b.tensors[static_cast<std::size_t>(tensor)].instances}};
}

// A member's byte range leaves its allocation (or its instance is not one), concretely.
inline std::string outside(const layout::BoundLayout& b, int tensor, std::int64_t instance, std::int64_t offset, std::int64_t bytes,
                    const char* side) {
  const auto& t = b.tensors[static_cast<std::size_t>(tensor)];
  std::string where = std::string(side) + " " + t.name;
  if (instance < 0 || instance >= t.instances)
    return where + " instance " + std::to_string(instance) + " is not one of its " + std::to_string(t.instances);
  if (offset < 0 || offset > allocation_bytes(b, tensor) - bytes)
    return where + "[" + std::to_string(instance) + "] bytes [" + std::to_string(offset) + ", " + std::to_string(offset) + "+" +
           std::to_string(bytes) + ") leave its " + std::to_string(allocation_bytes(b, tensor)) + "-byte allocation";
  return "";
}

inline void note_unknown(Finding& f, prove::Query& q, const std::string& what) {
  if (f.unknown.empty()) f.unknown = what + ": " + q.unknown_reason();
}

// The target byte of member m at byte k lies in the element of position x stored by target view tv, at
// byte j of the element.
struct TargetHit {
  z3::expr cond;
  prove::SymbolicPosition x;
  z3::expr k, j;
};

inline TargetHit target_hit(PlanEncoders& e, const Family& f, const SymbolicMember& m, std::size_t tv) {
  z3::context& c = e.f.ctx();
  const auto tt = static_cast<std::size_t>(f.target.tensor);
  const std::int64_t eb = e.t.bound().element_bytes();
  prove::SymbolicPosition x = e.t.position("x");
  z3::expr k = c.int_const("k"), j = c.int_const("j");
  z3::expr cond = m.box && k >= 0 && k < m.bytes && e.t.in_box(x) && e.t.view_domain(tt, tv, x) &&
                  e.t.instance(tt, x) == m.target_instance && j >= 0 && j < ival(c, eb) &&
                  m.target_offset + k == e.t.offset(tt, tv, x) * ival(c, eb) + j;
  return TargetHit{cond, x, k, j};
}

// Concretely: locate x in the target; its element holds target byte `byte` at byte j.
inline bool target_holds(const layout::BoundLayout& target, const std::vector<std::int64_t>& x, const layout::BlockTables& tables,
                  int tensor, std::int64_t instance, std::int64_t byte, layout::Location& loc) {
  loc = layout::locate(target, x, tables);
  const std::int64_t eb = target.element_bytes();
  return loc.placement == layout::Placement::Held && loc.address.tensor == tensor && loc.address.instance == instance &&
         loc.address.offset == expr::floor_div(byte, eb);
}

}  // namespace kvlayout::check::family_util
