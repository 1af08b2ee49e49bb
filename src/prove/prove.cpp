#include <chrono>

#include "prove/capability.hpp"
#include "prove/domain_cells.hpp"
#include "prove/encoder.hpp"
#include "prove/internal_error.hpp"
#include "prove/obligations.hpp"
#include "prove/proof.hpp"

namespace kvlayout::prove {

const ObligationResult* Proof::deciding() const {
  for (const auto& r : obligations)
    if (r.status != Status::Proved && r.reason == reason) return &r;
  return nullptr;
}

std::pair<Grade, Reason> grade_of(const std::vector<ObligationResult>& results) {
  Grade grade = Grade::ExactByte;
  Reason reason = Reason::Exact;
  bool unknown = false;
  for (const auto& r : results) {
    if (r.status == Status::Unknown) unknown = true;
    if (r.status != Status::Refuted) continue;
    Grade g = info(r.reason).grade;
    if (severity(g) > severity(grade)) {
      grade = g;
      reason = r.reason;
    }
  }
  if (unknown && grade != Grade::Refused) return {Grade::Unknown, Reason::SolverLimit};
  return {grade, reason};
}

namespace {

class Runner {
 public:
  Runner(Proof& proof, const ProveOptions& options) : proof_(proof), options_(options) {}

  // Runs `check` unless disabled; records its result and time. Returns the result (or nullptr if skipped).
  template <class Check>
  const ObligationResult* run(const std::string& name, Side side, Check check) {
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
    proof_.obligations.push_back(std::move(r));
    return &proof_.obligations.back();
  }

  void skip(const std::string& name, Side side, const std::string& because) {
    proof_.skipped.push_back({name, side, because});
  }

 private:
  Proof& proof_;
  const ProveOptions& options_;
};

bool proved(const ObligationResult* r) { return r && r->status == Status::Proved; }

}  // namespace

Proof prove(std::shared_ptr<const spec::Layout> source, std::shared_ptr<const spec::Layout> target,
            const spec::CacheShape& cache, const ProveOptions& options, const layout::Overrides& overrides) {
  auto start = std::chrono::steady_clock::now();
  Proof proof;
  proof.source_layout = source;
  proof.target_layout = target;
  proof.cache = cache;
  proof.obligations.reserve(16);  // results are referenced while later ones are added

  proof.source_bound = std::make_shared<const layout::BoundLayout>(layout::bind(source, cache, overrides));
  proof.target_bound = std::make_shared<const layout::BoundLayout>(layout::bind(target, cache, overrides));
  const layout::BoundLayout& S = *proof.source_bound;
  const layout::BoundLayout& T = *proof.target_bound;
  Pair pair{S, T};
  Session session(options, source->name + " -> " + target->name + " on " + cache.name,
                  source->name + "__" + target->name + "__" + cache.name);
  Runner run(proof, options);

  const ObligationResult* content = run.run("fits", Side::Pair, [&] { return check_content(*source, *target); });
  run.run("fits", Side::Source, [&] { return check_fits(S, Side::Source); });
  run.run("fits", Side::Target, [&] { return check_fits(T, Side::Target); });

  const ObligationResult* in_bounds[2] = {nullptr, nullptr};
  for (Side side : {Side::Source, Side::Target}) {
    const auto& b = pair.side(side);
    if (!b.fits()) run.skip("in-bounds", side, "fits(" + side_name(side) + ") refuted");
    else in_bounds[side == Side::Target] = run.run("in-bounds", side, [&] { return check_in_bounds(session, pair, side); });
  }
  const ObligationResult* injective[2] = {nullptr, nullptr};
  for (Side side : {Side::Source, Side::Target}) {
    const auto& b = pair.side(side);
    if (!b.fits()) {
      run.skip("injective", side, "fits(" + side_name(side) + ") refuted");
      continue;
    }
    bool split = proved(in_bounds[side == Side::Target]);
    injective[side == Side::Target] = run.run("injective", side, [&] { return check_injective(session, pair, side, split); });
  }
  const bool comparable = S.fits() && T.fits() && (!content || content->status == Status::Proved);
  if (comparable) {
    run.run("covers", Side::Pair, [&] { return check_covers(session, pair); });
    run.run("carries", Side::Pair, [&] { return check_carries(session, pair); });
  } else {
    std::string because = content && content->status != Status::Proved ? "the layouts hold different content"
                                                                        : "a layout does not fit the cache shape";
    run.skip("covers", Side::Pair, because);
    run.skip("carries", Side::Pair, because);
  }
  run.run("values", Side::Pair, [&] { return check_values(session, pair, *source, *target); });
  if (S.fits() && proved(in_bounds[0]) && proved(injective[0]))
    run.run("padding", Side::Source, [&] { return check_padding(session, pair); });
  else
    run.skip("padding", Side::Source, "in-bounds(source) and injective(source) are not both proven");

  std::tie(proof.grade, proof.reason) = grade_of(proof.obligations);
  if (!is_exact(proof.grade)) proof.unblocked_by = capability(proof, S, T, overrides);
  if (S.fits()) proof.source_positions = domain_size(S);
  if (T.fits()) proof.target_positions = domain_size(T);
  proof.queries = session.queries();
  proof.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return proof;
}

}  // namespace kvlayout::prove
