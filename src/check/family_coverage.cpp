// Coverage of a families plan by counting, never by enumerating members. With out-of-bounds, aliasing,
// wrong mappings and out-of-scope writes refuted, and the target in bounds and injective, every written
// target byte is either a byte of an in-scope held position (the right one) or padding. When moreover
// every target byte is written once (writes_once: a same-source duplicate is harmless but breaks this),
// with W = the bytes the families write and N = the in-scope held bytes:
//   W < N            -> UNCOVERED (at least N - W bytes unwritten, whatever else happens; duplicates or not);
//   no target padding -> W == N is OK (W > N would contradict the above: an internal error);
//   padding and W > N -> padding is written. It is FRAME_VIOLATION when a concrete padding write is not
//     the slack of a partial last block (the descriptors form's rule: a slack byte may receive the same
//     slot's source byte, in scope; never required), or when the pair has no slack under any table;
//     otherwise UNKNOWN (slack is not proved for every table here);
//   padding and W == N -> padding written and positions uncovered balance exactly, or both are absent.
//     Telling them apart is a for-all question; it is answered when every family carries an "at" hint (the
//     position each member byte writes, as expressions: a Skolem candidate the solver checks, never
//     trusts), or refuted by an uncovered position found; otherwise UNKNOWN.
// Without single writes only W < N and concrete witnesses decide; otherwise UNKNOWN, never OK.
#include "check/family_checks.hpp"

#include "check/family_witness.hpp"
#include "expr/arithmetic.hpp"
#include "expr/evaluate.hpp"
#include "layout/domain_cells.hpp"
#include "layout/view_algebra.hpp"
#include "prove/internal_error.hpp"

namespace kvlayout::check {
namespace {

bool reads_table(const expr::Expr& e) {
  if (e->op == expr::Op::Lookup) return true;
  for (const auto& a : e->args)
    if (reads_table(a)) return true;
  return false;
}

// W: the bytes the plan writes, counted per family (a constant length times the member count, or the sum
// of per-member lengths over a small family whose length reads no table). nullopt: not countable.
std::optional<std::int64_t> written_bytes(const FamilyPlan& plan, std::string& why) try {
  std::int64_t total = 0;
  layout::BlockTables none;
  for (const Family& f : plan.families) {
    if (f.bytes->op == expr::Op::Literal) {
      total = expr::checked_add(total, expr::checked_mul(f.members, f.bytes->value));
      continue;
    }
    if (f.members > kEvaluateMembers || reads_table(f.bytes)) {
      why = "family " + f.id + "'s length is not constant (" + std::to_string(f.members) + " members" +
            (reads_table(f.bytes) ? ", and it reads a block table" : "") + ")";
      return std::nullopt;
    }
    for_each_member(f, [&](const std::vector<std::int64_t>& v) {
      expr::Environment env{v, [](int, std::int64_t) -> std::int64_t { throw std::logic_error("no table"); }};
      total = expr::checked_add(total, std::max<std::int64_t>(0, expr::evaluate(f.bytes, env)));
      return true;
    });
  }
  return total;
} catch (const expr::ArithmeticError& e) {
  why = std::string("the byte count overflows 64 bits (") + e.what() + ")";
  return std::nullopt;
}

// FRAME_VIOLATION from a concrete padding write that is not allowed slack (padding_writes re-checked it).
CheckResult padding_violation(const nlohmann::json& witness, const std::string& counts) {
  CheckResult r;
  r.verdict = Verdict::FrameViolation;
  const auto& t = witness["target"];
  r.message = "family " + witness["family"].get<std::string>() + " member " + witness["member"].dump() + " writes padding: " +
              t["tensor"].get<std::string>() + "[" + std::to_string(t["instance"].get<std::int64_t>()) + "] byte " +
              std::to_string(t["byte"].get<std::int64_t>()) + " under identity tables";
  r.counterexample = witness;
  r.details = {counts, witness["how"].get<std::string>(), "e.g. " + witness.dump()};
  return r;
}

}  // namespace

Finding count_coverage(prove::Session& s, const layout::BoundLayout& source, const layout::BoundLayout& target, const FamilyPlan& plan,
                       const std::string& not_once, std::int64_t& written) {
  Finding out;
  std::vector<expr::Expr> predicates = {layout::held_predicate(target)};
  if (plan.scope) predicates.push_back(*plan.scope);
  auto in_scope = layout::describe_positions(target, predicates, [](const std::vector<bool>& t) {
    for (bool b : t)
      if (!b) return false;
    return true;
  });
  auto domain = layout::domain_size(target);
  if (!in_scope || !domain) {
    out.unknown = "the in-scope positions are not countable (a domain or scope that is not a combination of single-coordinate bounds)";
    return out;
  }
  std::string why;
  auto w = written_bytes(plan, why);
  if (!w) {
    out.unknown = "the written bytes are not countable: " + why;
    return out;
  }
  written = *w;
  const std::int64_t eb = target.element_bytes();
  std::int64_t needed = 0;
  try {
    needed = expr::checked_mul(in_scope->count, eb);
  } catch (const expr::ArithmeticError&) {
    out.unknown = "the in-scope byte count overflows 64 bits";
    return out;
  }
  const std::int64_t padding = layout::storage_elements(target) - *domain;
  const std::string counts = std::to_string(*w) + " byte(s) written, " + std::to_string(needed) + " in scope (" +
                             std::to_string(in_scope->count) + " positions x " + std::to_string(eb) + " bytes)";
  if (*w < needed) {
    CheckResult r;
    r.verdict = Verdict::Uncovered;
    r.message = "at least " + std::to_string(needed - *w) + " in-scope byte(s) are never written: " + counts;
    if (auto found = uncovered_witness(s, source, target, plan, predicates)) {
      r.counterexample = found->counterexample;
      r.details = found->details;
    } else {
      r.counterexample = nlohmann::json::object();
      r.details = {"no unwritten position found among the corners of the in-scope cells (the count above is the proof)"};
    }
    r.counterexample["count_bytes"] = needed - *w;
    r.counterexample["written_bytes"] = *w;
    r.counterexample["in_scope_bytes"] = needed;
    r.details.insert(r.details.begin(), counts);
    out.result = r;
    return out;
  }
  if (!not_once.empty()) {
    // W counts some byte twice: W >= N proves nothing. Only concrete witnesses decide; otherwise UNKNOWN.
    if (auto found = uncovered_witness(s, source, target, plan, predicates)) {
      CheckResult r = *found;
      r.message = "an in-scope position is never written (" + counts + ", some byte written twice from the same source byte)";
      r.details.insert(r.details.begin(), counts);
      out.result = r;
      return out;
    }
    if (padding > 0) {
      PaddingWrites pw = padding_writes(source, target, plan);
      if (pw.violation) {
        out.result = padding_violation(*pw.violation, counts);
        return out;
      }
    }
    out.unknown = "coverage is not decided: " + not_once + "; so the " + counts +
                  " cannot be counted against each other, and no unwritten position or wrong padding write was found";
    return out;
  }
  if (padding == 0) {
    if (*w > needed)
      throw prove::InternalError("families write " + counts + " with no double write, no padding and nothing out of scope");
    return out;  // OK
  }
  if (*w > needed) {
    PaddingWrites pw = padding_writes(source, target, plan);
    if (pw.violation) {
      out.result = padding_violation(*pw.violation, counts);
      return out;
    }
    if (!pw.slack_possible) {
      CheckResult r;
      r.verdict = Verdict::FrameViolation;
      r.message = "at least " + std::to_string(*w - needed) + " byte(s) of padding are written: " + counts;
      r.counterexample = {{"count_bytes", *w - needed}};
      r.details = {counts, "every written byte is written once, and none holds an out-of-scope position, so the excess is padding",
                   "and the pair has no slack of a partial last block under any block table"};
      out.result = r;
      return out;
    }
    out.unknown = "at least " + std::to_string(*w - needed) + " byte(s) of padding are written (" + counts +
                  "), and they may be the slack of a partial last block, which a whole-block copy may write from the same "
                  "slot of the source (allowed, never required); the families checker does not prove that for every block table (" +
                  (!pw.why.empty() ? pw.why
                   : pw.searched ? "under identity tables all " + std::to_string(pw.slack_bytes) + " padding byte(s) written are such slack"
                                 : "too many members or positions to look for a wrong padding write concretely") +
                  ")";
    return out;
  }
  const std::string hint = hints_prove_no_padding(s, source, target, plan);
  if (hint.empty()) return out;  // no padding written, so the W == N bytes are exactly the in-scope ones: OK
  if (auto found = uncovered_witness(s, source, target, plan, predicates)) {
    CheckResult r = *found;
    r.message = "an in-scope position is never written although " + counts + ": the plan writes as many padding bytes";
    r.details.insert(r.details.begin(), counts);
    out.result = r;
    return out;
  }
  out.unknown = counts + ", but the target has " + std::to_string(padding) +
                " padding element(s): whether the plan writes padding (and leaves as many bytes unwritten) is not decided (" + hint + ")";
  return out;
}

}  // namespace kvlayout::check
