#include <chrono>

#include "prove/capability.hpp"
#include "layout/domain_cells.hpp"
#include "prove/encoder.hpp"
#include "prove/internal_error.hpp"
#include "prove/obligation_registry.hpp"
#include "prove/proof.hpp"
#include "prove/side_cache.hpp"

namespace kvlayout::prove {

const ObligationResult* Proof::deciding() const {
  for (const auto* list : {&preconditions, &obligations})
    for (const auto& r : *list)
      if (r.status != Status::Proved && r.reason == reason) return &r;
  return nullptr;
}

namespace {

class Runner {
 public:
  Runner(Proof& proof, const ProveOptions& options) : proof_(proof), options_(options) {}

  // Runs `check` unless disabled; records its result and time. Returns the result (or nullptr if skipped).
  template <class Check>
  const ObligationResult* run(const std::string& name, Side side, bool precondition, Check check) {
    if (options_.disabled.count(name)) {
      proof_.skipped.push_back({name, side, "disabled (test-only switch)"});
      return nullptr;
    }
    auto start = std::chrono::steady_clock::now();
    ObligationResult r;
    try {
      r = check();
    } catch (const EncodeError& e) {
      throw InternalError(name + "(" + side_name(side) + "): " + e.what());
    } catch (const z3::exception& e) {
      r = ObligationResult{};
      r.name = name;
      r.side = side;
      r.status = Status::Unknown;
      r.reason = Reason::SolverLimit;
      r.method = "z3";
      r.detail = std::string("the solver failed: ") + e.msg();
    }
    r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    auto& into = precondition ? proof_.preconditions : proof_.obligations;
    into.push_back(std::move(r));
    return &into.back();
  }

  void skip(const std::string& name, Side side, const std::string& because) {
    proof_.skipped.push_back({name, side, because});
  }

 private:
  Proof& proof_;
  const ProveOptions& options_;
};


// A per-side obligation through the campaign's cache: computed once per (obligation, layout, shape),
// its counterexamples rebuilt for this pair and side.
template <class Check>
ObligationResult side_fact(const ProveOptions& options, const std::string& key, const Pair& pair, Side side, Check check) {
  if (!options.side_cache) return check();
  if (auto fact = options.side_cache->find(key)) {
    ObligationResult r = fact->result;
    r.side = side;
    if (r.counterexample) {
      r.counterexample->positions.clear();
      for (const auto& [coord, tables] : fact->witnesses) r.counterexample->positions.push_back(make_witness(pair, side, coord, tables));
    }
    return r;
  }
  ObligationResult r = check();
  SideFact fact{r, {}};
  if (r.counterexample)
    for (const auto& w : r.counterexample->positions)
      if (w.side_tables) fact.witnesses.emplace_back(w.coord, *w.side_tables);
  options.side_cache->store(key, std::move(fact));
  return r;
}

std::string fact_key(const std::string& obligation, const layout::BoundLayout& b, const layout::Overrides& overrides,
                     const ProveOptions& options) {
  std::string key = obligation + "|" + b.layout->file + "|" + b.layout->name + "|" + b.cache.name;
  for (const auto& [k, v] : overrides) key += "|" + k + "=" + std::to_string(v);
  return key + (options.normalise ? "" : "|solver-only") + "|" + std::to_string(options.limit_ms);
}

// Why `row` cannot run on `side`: the first prerequisite not proved ("fits(source) refuted"), or empty.
std::string unmet_need(const ObligationRow& row, Side side, const std::vector<ObligationResult>& results) {
  Results so_far(results);
  for (const ObligationRef& need : row.needs) {
    const Side on = need.on(side);
    if (so_far.proved(need.name, on)) continue;
    const std::string what = need.name + "(" + side_name(on) + ")";
    if (so_far.refuted(need.name, on)) return what + " refuted";
    return what + " not proved";
  }
  return "";
}

// A per-layout fact's cache key names the hints it was computed with (injective splits on in-bounds).
std::string variant_key(const ObligationRow& row, Side side, const std::vector<ObligationResult>& results) {
  std::string key = row.name;
  for (const ObligationRef& use : row.uses)
    if (Results(results).proved(use.name, use.on(side))) key += "+" + use.name;
  return key;
}

void run_row(Runner& run, const ObligationRow& row, Side side, Session& session, const Pair& pair, const ProveOptions& options,
             const layout::Overrides& overrides, Proof& proof) {
  if (std::string unmet = unmet_need(row, side, proof.obligations); !unmet.empty()) {
    run.skip(row.name, side, unmet);
    return;
  }
  Results so_far(proof.obligations);
  auto check = [&] { return row.check(session, pair, side, so_far); };
  run.run(row.name, side, row.precondition, [&] {
    if (!row.per_layout) return check();
    const auto& b = pair.side(side);
    return side_fact(options, fact_key(variant_key(row, side, proof.obligations), b, overrides, options), pair, side, check);
  });
}

}  // namespace

Proof prove(std::shared_ptr<const spec::Layout> source, std::shared_ptr<const spec::Layout> target,
            const spec::CacheShape& cache, const ProveOptions& options, const layout::Overrides& overrides) {
  auto start = std::chrono::steady_clock::now();
  Proof proof;
  proof.source_layout = source;
  proof.target_layout = target;
  proof.cache = cache;
  proof.obligations.reserve(16);
  proof.preconditions.reserve(4);  // results are referenced while later ones are added

  proof.source_bound = std::make_shared<const layout::BoundLayout>(layout::bind(source, cache, overrides));
  proof.target_bound = std::make_shared<const layout::BoundLayout>(layout::bind(target, cache, overrides));
  const layout::BoundLayout& S = *proof.source_bound;
  const layout::BoundLayout& T = *proof.target_bound;
  Pair pair{S, T};
  Session session(options, source->name + " -> " + target->name + " on " + cache.name,
                  source->name + "__" + target->name + "__" + cache.name);
  Runner run(proof, options);
  std::size_t total = 0, done = 0;
  for (const ObligationRow& row : obligation_registry()) total += row.sides.size();
  for (const ObligationRow& row : obligation_registry())
    for (Side side : row.sides) {
      if (options.progress) options.progress(row.name + "(" + side_name(side) + ")", done++, total);
      run_row(run, row, side, session, pair, options, overrides, proof);
    }
  if (options.progress) options.progress("done", total, total);

  std::vector<ObligationResult> all = proof.preconditions;  // an unknown precondition leaves the grade UNKNOWN
  all.insert(all.end(), proof.obligations.begin(), proof.obligations.end());
  std::tie(proof.grade, proof.reason) = grade_of(all);
  if (!is_exact(proof.grade)) proof.unblocked_by = capability(proof, S, T, overrides);
  if (S.fits()) proof.source_positions = layout::domain_size(S);
  if (T.fits()) proof.target_positions = layout::domain_size(T);
  proof.queries = session.queries();
  proof.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return proof;
}

}  // namespace kvlayout::prove
