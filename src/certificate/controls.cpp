#include "certificate/controls.hpp"

#include <algorithm>
#include <mutex>
#include <thread>
#include <atomic>

#include "certificate/mutation.hpp"
#include "certificate/ownership_mutation.hpp"
#include "certificate/parallel.hpp"
#include "enumerate/cross_check.hpp"
#include "prove/equivalence.hpp"
#include "prove/obligation_registry.hpp"
#include "prove/proof.hpp"
#include "prove/side_cache.hpp"
#include "spec/error.hpp"

namespace kvlayout::certificate {
namespace {

const char* kFictional = "fictional-engine-9000";
const char* kReference = "vllm-flash-nhd";

// Do the two enumerations place every position alike (same storage shape, element type and scale)?
// A layout that does not fit, or addresses out of bounds, is never alike another.
bool same_by_enumeration(const enumerate::Enumerated& a, const enumerate::Enumerated& b) {
  if (!a.bound->fits() || !b.bound->fits()) return false;
  for (const auto* e : {&a, &b})
    for (const auto& m : e->maps)
      if (m.out_of_bounds > 0) return false;
  const spec::Layout& la = *a.layout;
  const spec::Layout& lb = *b.layout;
  if (la.dtype != lb.dtype) return false;
  bool same_scale = (!la.scale && !lb.scale) || (la.scale && lb.scale && la.scale->dtype == lb.scale->dtype && la.scale->per == lb.scale->per);
  if (!same_scale) return false;
  if (a.bound->tensors.size() != b.bound->tensors.size()) return false;
  for (std::size_t t = 0; t < a.bound->tensors.size(); ++t)
    if (a.bound->tensors[t].instances != b.bound->tensors[t].instances || a.bound->tensors[t].size != b.bound->tensors[t].size)
      return false;
  if (a.bound->tables.size() != b.bound->tables.size()) return false;
  for (std::size_t k = 0; k < a.maps.size() && k < b.maps.size(); ++k)
    if (a.maps[k].element != b.maps[k].element) return false;
  return true;
}

MutantOutcome judge(const std::shared_ptr<const spec::Layout>& original, const enumerate::Enumerated& original_enum,
                    const Mutant& mutant, const spec::CacheShape& small, const prove::ProveOptions& options) {
  MutantOutcome out{original->name, mutant.layout->name, mutant.kind, mutant.description, "", "", "", "", ""};
  enumerate::Enumerated mutant_enum;
  try {
    mutant_enum = enumerate::enumerate_layout(mutant.layout, small);
  } catch (const spec::SpecError& e) {
    out.verdict = "invalid";
    out.detail = e.what();
    return out;
  }
  // A valid mutant too large to enumerate on the cross-check shape: no witness, so no verdict on it.
  for (const std::string& too_large : {original_enum.too_large, mutant_enum.too_large})
    if (!too_large.empty()) {
      out.verdict = "not-cross-checked";
      out.detail = too_large;
      return out;
    }
  prove::Proof forward = prove::prove(original, mutant.layout, small, options);
  out.grade = prove::grade_name(forward.grade);
  out.reason = prove::info(forward.reason).code;
  // The enumeration is the independent witness on every mutant pair, as on every matrix row.
  enumerate::CrossCheck cc = enumerate::cross_check(original_enum, mutant_enum);
  if (cc.grade != forward.grade || cc.reason != forward.reason) {
    out.verdict = "disagree";
    out.detail = "cross-check " + prove::grade_name(cc.grade) + " [" + prove::info(cc.reason).code + "] vs prover " + out.grade;
    return out;
  }
  const bool differs = !same_by_enumeration(original_enum, mutant_enum);
  if (differs && !prove::is_exact(forward.grade)) {
    out.verdict = "killed";
    out.caught_by = "grade";
    out.detail = out.grade + " [" + out.reason + "]";
    return out;
  }
  // An exact grade: either the mutant is equivalent, or it is a valid layout of its own, which only a
  // proof that the two address functions differ can tell apart.
  prove::Equivalence e = prove::same_address_function(*original_enum.bound, *mutant_enum.bound, options);
  if (e.status == prove::Status::Unknown) {
    out.verdict = "unknown";
    out.detail = e.detail;
  } else if (!differs) {
    out.verdict = e.status == prove::Status::Proved ? "equivalent" : "disagree";
    out.detail = e.status == prove::Status::Proved ? "the same address function (proven, and equal by enumeration)"
                                                   : "equal by enumeration but refuted equal: " + e.detail;
  } else if (e.status == prove::Status::Refuted) {
    out.verdict = "killed";
    out.caught_by = "address function";
    out.detail = "a valid layout of its own (the move original -> mutant is " + out.grade + "); " + e.detail;
  } else {
    // The one way a differing mutant survives: the checker claims it is the original's layout.
    out.verdict = "survived";
    out.detail = "proven equal but the enumeration places positions differently";
  }
  return out;
}

// Keeps the items of a sample (in_sample), in order.
template <class Item>
void thin_to_sample(std::vector<Item>& items, std::size_t sample) {
  std::vector<Item> kept;
  for (std::size_t i = 0; i < items.size(); ++i)
    if (in_sample(i, sample)) kept.push_back(std::move(items[i]));
  items = std::move(kept);
}

}  // namespace

bool Controls::ok() const {
  auto count = [&](const char* v) { auto it = verdicts.find(v); return it == verdicts.end() ? 0 : it->second; };
  if (count("disagree") || count("unknown") || count("survived")) return false;
  for (const auto& b : broken)
    if (!b.ok) return false;
  for (const auto& s : self_checks)
    if (!s.ok) return false;
  return true;
}

Controls run_controls(const spec::Catalog& catalog, const Matrix& matrix, const MatrixOptions& options) {
  Controls c;
  const spec::CacheShape& small = matrix.caches.at(matrix.cross_check_cache);
  prove::ProveOptions prove_options = options.prove;
  if (!prove_options.side_cache) prove_options.side_cache = std::make_shared<prove::SideCache>();

  // Mutants of every engine declaration, on the cross-check shape.
  std::vector<std::shared_ptr<const spec::Layout>> engines;
  for (const auto& l : matrix.layouts)
    if (!l->control) engines.push_back(l);
  std::vector<std::pair<std::size_t, Mutant>> work;
  for (std::size_t i = 0; i < engines.size(); ++i)
    for (auto& m : mutants(*engines[i])) work.emplace_back(i, std::move(m));
  thin_to_sample(work, options.sample);
  // Each original enumerated once, shared by its mutants; only those a mutant in the sample judges against.
  std::vector<std::size_t> judged;
  for (const auto& [i, m] : work)
    if (judged.empty() || judged.back() != i) judged.push_back(i);
  std::vector<enumerate::Enumerated> originals(engines.size());
  parallel_for(judged.size(), options.jobs, [&](std::size_t k) { originals[judged[k]] = enumerate::enumerate_layout(engines[judged[k]], small); });
  c.mutants.resize(work.size());
  parallel_for(work.size(), options.jobs, [&](std::size_t k) {
    const auto& [i, m] = work[k];
    try {
      c.mutants[k] = judge(engines[i], originals[i], m, small, prove_options);
    } catch (const std::exception& e) {
      c.mutants[k] = MutantOutcome{engines[i]->name, m.layout->name, m.kind, m.description, "disagree", "", "", "", std::string("internal error: ") + e.what()};
    }
  }, phase_progress(options.progress, "controls: mutants"));
  // Ownership mutants of every rank family, judged by group moves on the cross-check shape.
  // The original family's moves first, once per family, shared by its mutants.
  std::vector<std::pair<std::size_t, Mutant>> ownership;
  for (std::size_t i = 0; i < engines.size(); ++i)
    for (auto& m : ownership_mutants(*engines[i])) ownership.emplace_back(i, std::move(m));
  thin_to_sample(ownership, options.sample);
  std::vector<std::size_t> families;  // those a mutant in the sample is judged against
  for (const auto& [i, m] : ownership)
    if (families.empty() || families.back() != i) families.push_back(i);
  std::vector<OwnershipBaseline> baselines(families.size());
  parallel_for(families.size(), options.jobs, [&](std::size_t f) {
    try {
      baselines[f] = ownership_baseline(engines[families[f]], small, prove_options);
    } catch (const spec::SpecError&) {
      baselines[f].family = engines[families[f]];  // no move to judge by: its mutants are not-cross-checked
    }
  });
  auto baseline_of = [&](std::size_t engine) -> const OwnershipBaseline& {
    return baselines[static_cast<std::size_t>(std::find(families.begin(), families.end(), engine) - families.begin())];
  };
  const std::size_t first_ownership = c.mutants.size();
  c.mutants.resize(first_ownership + ownership.size());
  parallel_for(ownership.size(), options.jobs, [&](std::size_t k) {
    const auto& [i, m] = ownership[k];
    try {
      c.mutants[first_ownership + k] = judge_ownership_mutant(baseline_of(i), m, small, prove_options);
    } catch (const std::exception& e) {
      c.mutants[first_ownership + k] = MutantOutcome{engines[i]->name, m.layout->name, m.kind, m.description, "disagree", "", "", "", std::string("internal error: ") + e.what()};
    }
  }, phase_progress(options.progress, "controls: ownership mutants"));
  std::size_t killed = 0, survived = 0;
  for (const auto& m : c.mutants) {
    ++c.verdicts[m.verdict];
    if (m.verdict == "killed") ++killed;
    if (m.verdict == "survived") ++survived;
    if (m.caught_by == "grade") ++c.killed_by_grade;
  }
  c.mutation_score = killed + survived == 0 ? 1.0 : static_cast<double>(killed) / static_cast<double>(killed + survived);

  // The broken declarations, refused for their expected reasons in both directions, on the matrix's
  // cross-check shape (their rows may be cross-checked on a derived one, where broken-nofit fits).
  auto layout = [&](const std::string& name) -> std::shared_ptr<const spec::Layout> {
    for (const auto& l : matrix.layouts)
      if (l->name == name) return l;
    return nullptr;
  };
  auto small_reason = [&](const std::shared_ptr<const spec::Layout>& s, const std::shared_ptr<const spec::Layout>& t) {
    return prove::info(prove::prove(s, t, small, prove_options).reason).code;
  };
  struct Expectation {
    const char* layout;
    const char* reason;
  };
  // (A specs directory without these declarations runs the controls it can.)
  for (Expectation e : {Expectation{"broken-collide", "collision"}, {"broken-oob", "out-of-bounds"}, {"broken-nofit", "does-not-fit"}}) {
    auto reference = layout(kReference), broken = layout(e.layout);
    if (!reference || !broken) continue;
    BrokenControl b{e.layout, e.reason, matrix.cross_check_cache, "", "", false};
    b.forward = small_reason(reference, broken);
    b.backward = small_reason(broken, reference);
    b.ok = b.forward == e.reason && b.backward == e.reason;
    c.broken.push_back(b);
  }
  auto declared = [&](const std::string& name) {
    return std::any_of(matrix.layouts.begin(), matrix.layouts.end(), [&](const auto& l) { return l->name == name; });
  };

  // The checker checks itself: with one obligation off, its known-bad pair (from the obligation
  // registry) is no longer caught.
  struct Known {
    std::string obligation, source, target;
  };
  std::vector<Known> known;
  for (const auto& row : prove::obligation_registry())
    if (!row.control_source.empty() &&
        std::none_of(known.begin(), known.end(), [&](const Known& k) { return k.obligation == row.name && k.source == row.control_source; }))
      known.push_back({row.name, row.control_source, row.control_target});
  for (const Known& k : known) {
    if (!declared(k.source) || !declared(k.target)) continue;
    auto s = spec::load_layout(catalog.find_layout(k.source).string());
    auto t = spec::load_layout(catalog.find_layout(k.target).string());
    prove::ProveOptions on = options.prove, off = options.prove;
    off.disabled = {k.obligation};
    prove::Grade g_on = prove::prove(s, t, small, on).grade;
    prove::Grade g_off = prove::prove(s, t, small, off).grade;
    bool ok = g_on != prove::Grade::Unknown && g_off != prove::Grade::Unknown && prove::severity(g_off) < prove::severity(g_on);
    c.self_checks.push_back({k.obligation, k.source, k.target, matrix.cross_check_cache, prove::grade_name(g_on),
                             prove::grade_name(g_off), ok});
  }

  // The fictional engine, graded like any other.
  for (const auto& r : matrix.rows)
    if (r.source == kFictional || r.target == kFictional) ++c.fictional_grades[prove::grade_name(r.grade)];
  c.fictional_statement =
      std::string(kFictional) + " is made up, and it is graded like every engine: kvlayout proves things about "
      "declarations (that each is in bounds and injective, and that a move between two of them is exact), not about "
      "vendors. Whether a declaration describes what an engine really does rests on its citation, which a proof "
      "cannot check.";
  return c;
}

}  // namespace kvlayout::certificate
