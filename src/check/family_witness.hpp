#pragma once
// The searches and proofs behind the coverage count of a families plan (family_coverage.cpp): an
// unwritten in-scope position, member bytes on padding (and whether they are allowed slack), and the proof of
// the "at" hints.
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
// Member bytes on target padding under identity tables, judged by the descriptors form's rule for the
// slack of a partial last block (specs/plans.md): a slack byte may receive the same slot's source slack
// byte where the scope holds; any other padding write is a FRAME_VIOLATION.
struct PaddingWrites {
  std::optional<nlohmann::json> violation;  // a padding write that is not allowed slack (re-checked concretely)
  std::int64_t slack_bytes = 0;             // padding bytes written that are allowed slack (when searched)
  bool searched = false;                    // every member was evaluated (target and plan small enough)
  bool slack_possible = true;               // false: no block table gives the pair any slack (expected move)
  std::string why;                          // non-empty: the expected move is not available (slack_possible stays true)
};
PaddingWrites padding_writes(const layout::BoundLayout& source, const layout::BoundLayout& target, const FamilyPlan& plan);
// Empty when every family's "at" hint is proved (then no member byte writes padding); otherwise why not.
std::string hints_prove_no_padding(prove::Session& s, const layout::BoundLayout& source, const layout::BoundLayout& target,
                                   const FamilyPlan& plan);

}  // namespace kvlayout::check
