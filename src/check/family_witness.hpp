#pragma once
// The searches and proofs behind the coverage count of a families plan (family_coverage.cpp): an
// unwritten in-scope position, a member byte on padding, and the proof of the "at" hints.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "check/family_plan.hpp"
#include "check/result.hpp"
#include "prove/session.hpp"

namespace kvlayout::check {

// Members whose lengths are evaluated one by one, or checked concretely for a witness.
constexpr std::int64_t kEvaluateMembers = std::int64_t{1} << 20;

// Calls visit(vars) for every member of f, in odometer order; stops when visit returns false.
template <typename Visit>
void for_each_member(const Family& f, Visit visit) {
  std::vector<std::int64_t> v = f.first;
  for (std::size_t i = 0; i < f.vars.size(); ++i)
    if (f.first[i] >= f.end[i]) return;
  for (;;) {
    if (!visit(v)) return;
    std::size_t i = v.size();
    while (i-- > 0) {
      if (++v[i] < f.end[i]) break;
      v[i] = f.first[i];
    }
    if (i == static_cast<std::size_t>(-1)) return;
  }
}

// One in-scope held position that no member writes (byte 0 of its element), under identity tables, among
// the corners of the in-scope cells (`predicates`: the target's held predicate and the scope).
std::optional<CheckResult> uncovered_witness(prove::Session& s, const layout::BoundLayout& source, const layout::BoundLayout& target,
                                             const FamilyPlan& plan, const std::vector<expr::Expr>& predicates);
// A member byte on padding, found concretely (identity tables) where the target and the plan are small.
std::optional<nlohmann::json> padding_witness(const layout::BoundLayout& source, const layout::BoundLayout& target, const FamilyPlan& plan);
// Empty when every family's "at" hint is proved (then no member byte writes padding); otherwise why not.
std::string hints_prove_no_padding(prove::Session& s, const layout::BoundLayout& source, const layout::BoundLayout& target,
                                   const FamilyPlan& plan);

}  // namespace kvlayout::check
