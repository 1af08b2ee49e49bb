// Group rows, in phases per row: (1) look up the table's names (a missing one is the row's error); (2) the
// group proof on the production shape; (3) the cross-check shape: the matrix's small shape with the row's
// changes, or one derived from it when a member does not fit; (4) the group proof there and the group
// cross-check by enumeration, compared.
#include "certificate/group_rows.hpp"

#include <algorithm>
#include <cstdio>
#include <new>
#include <set>
#include <sstream>
#include <stdexcept>

#include "certificate/certificate.hpp"
#include "certificate/deciding_counterexample.hpp"
#include "certificate/parallel.hpp"
#include "enumerate/derive_shape.hpp"
#include "enumerate/group_cross_check.hpp"
#include "layout/rank_group.hpp"
#include "prove/group.hpp"
#include "prove/group_report.hpp"
#include "prove/side_cache.hpp"
#include "spec/error.hpp"

namespace kvlayout::certificate {

namespace {

using Params = std::map<std::string, std::int64_t>;

std::string params_text(const Params& p) {
  std::string out;
  for (const auto& [name, value] : p) out += (out.empty() ? "" : ", ") + name + "=" + std::to_string(value);
  return out;
}

std::string side_text(const std::string& name, const Params& p) {
  return p.empty() ? name : name + " (" + params_text(p) + ")";
}

spec::Json params_json(const Params& p) {
  spec::Json j = spec::Json::object();
  for (const auto& [name, value] : p) j[name] = value;
  return j;
}

// The matrix's cross-check shape with a row's changes, named as a derived shape ("small[num_kv_heads=2]").
spec::CacheShape row_small(const spec::CacheShape& small, const Params& changes) {
  if (changes.empty()) return small;
  spec::CacheShape s = small;
  for (const auto& [name, value] : changes) s.params[name] = value;
  s.name = enumerate::derived_name(small, s);
  s.synthetic = true;
  s.description = small.name + " with " + params_text(changes) + ", for group rows whose production model has them";
  return s;
}

bool enumerated(const enumerate::EnumeratedGroup& g) {
  return std::all_of(g.members.begin(), g.members.end(), [](const enumerate::Enumerated& e) { return e.bound->fits(); });
}

struct Prepared {
  std::shared_ptr<const spec::Layout> source, target;
  const spec::CacheShape* cache = nullptr;
};

}  // namespace

const std::vector<GroupRowSpec>& group_row_table() {
  static const std::vector<GroupRowSpec> table = [] {
    const std::string tp = "vllm-flash-nhd-tp", whole = "vllm-flash-nhd", pp = "vllm-flash-nhd-pp";
    const std::string llama = "llama-3.1-70b", qwen = "qwen2.5-1.5b";
    auto tp_size = [](std::int64_t n) { return Params{{"tp_size", n}}; };
    auto pp_size = [](std::int64_t n) { return Params{{"pp_size", n}}; };
    std::vector<GroupRowSpec> t;
    // Hetero TP (prefill on one TP size, decode on another): every ordered pair of 1, 2, 4 on 8 KV heads.
    for (std::int64_t a : {1, 2, 4})
      for (std::int64_t b : {1, 2, 4})
        if (a != b) t.push_back({tp, tp_size(a), tp, tp_size(b), llama, {}});
    // A whole cache scattered to TP ranks (8 ranks: one head each) and gathered back.
    for (std::int64_t b : {2, 4, 8}) t.push_back({whole, {}, tp, tp_size(b), llama, {}});
    for (std::int64_t b : {2, 4, 8}) t.push_back({tp, tp_size(b), whole, {}, llama, {}});
    // Replicated heads: 2 KV heads on 4 ranks (two ranks per head), cross-checked with 2 KV heads as well.
    for (auto [a, b] : {std::pair<std::int64_t, std::int64_t>{1, 4}, {4, 1}, {2, 4}, {4, 2}})
      t.push_back({tp, tp_size(a), tp, tp_size(b), qwen, {{"num_kv_heads", 2}}});
    // Engines' TP groups against vLLM's (and each other) at other sizes.
    t.push_back({"sglang-mha-tp", tp_size(2), tp, tp_size(4), llama, {}});
    t.push_back({tp, tp_size(8), "sglang-mha-tp", tp_size(2), llama, {}});
    t.push_back({"trtllm-pool-tp", tp_size(4), tp, tp_size(2), llama, {}});
    t.push_back({tp, tp_size(1), "trtllm-pool-tp", tp_size(8), llama, {}});
    t.push_back({"sglang-mha-tp", tp_size(4), "trtllm-pool-tp", tp_size(2), qwen, {{"num_kv_heads", 2}}});
    // Pipeline stages: 2 stages <-> 1, and a whole cache <-> 4 stages; cross-checked on 3 and 5 layers, so
    // that the stages' layer ranges are uneven there (get_pp_indices' remainder).
    t.push_back({pp, pp_size(2), pp, pp_size(1), llama, {{"num_layers", 3}}});
    t.push_back({pp, pp_size(1), pp, pp_size(2), llama, {{"num_layers", 3}}});
    t.push_back({whole, {}, pp, pp_size(4), llama, {{"num_layers", 5}}});
    t.push_back({pp, pp_size(4), whole, {}, llama, {{"num_layers", 5}}});
    // TP within PP stages, gathered to one cache and scattered back.
    t.push_back({"vllm-flash-nhd-tp-pp", {{"pp_size", 2}, {"tp_size", 2}}, whole, {}, llama, {{"num_layers", 3}}});
    t.push_back({whole, {}, "vllm-flash-nhd-tp-pp", {{"pp_size", 2}, {"tp_size", 4}}, llama, {{"num_layers", 3}}});
    // MLA latents: every TP rank holds the whole latent (replicas, not shards).
    t.push_back({"vllm-mla-tp", tp_size(2), "vllm-mla", {}, "deepseek-v3", {}});
    t.push_back({"vllm-mla", {}, "vllm-mla-tp", tp_size(4), "deepseek-v3", {}});
    return t;
  }();
  return table;
}

std::string group_row_key(const GroupRowSpec& s) {
  return side_text(s.source, s.source_params) + " -> " + side_text(s.target, s.target_params) + " on " + s.cache;
}

GroupRows run_group_rows(const spec::Catalog& catalog, const std::vector<std::shared_ptr<const spec::Layout>>& layouts,
                         const std::vector<GroupRowSpec>& table, const spec::CacheShape& small,
                         const prove::ProveOptions& options, int jobs) {
  GroupRows out;
  out.rows.resize(table.size());
  std::vector<Prepared> prepared(table.size());
  // Phase 1, serially: every name the table lists, looked up (shapes loaded once).
  auto layout = [&](const std::string& name) -> std::shared_ptr<const spec::Layout> {
    for (const auto& l : layouts)
      if (l->name == name) return l;
    return nullptr;
  };
  std::map<std::string, spec::CacheShape> production;
  for (std::size_t i = 0; i < table.size(); ++i) {
    GroupRow& row = out.rows[i];
    row.spec = table[i];
    row.cross_check_cache = row_small(small, table[i].cross_check_params).name;
    Prepared& p = prepared[i];
    p.source = layout(table[i].source);
    p.target = layout(table[i].target);
    for (const auto& [name, found] : {std::pair{table[i].source, p.source != nullptr}, {table[i].target, p.target != nullptr}})
      if (!found && row.error.empty())
        row.error = "the group-row table names layout \"" + name + "\", which the specs do not declare";
    if (!row.error.empty()) continue;
    if (!production.count(table[i].cache)) {
      try {
        production.emplace(table[i].cache, spec::load_cache(catalog.find_cache(table[i].cache).string()));
      } catch (const spec::SpecError& e) {
        row.error = "the group-row table names cache shape \"" + table[i].cache + "\", which the specs lack: " + e.what();
        continue;
      }
    }
    p.cache = &production.at(table[i].cache);
  }

  prove::ProveOptions prove_options = options;
  if (!prove_options.side_cache) prove_options.side_cache = std::make_shared<prove::SideCache>();
  std::vector<spec::CacheShape> shapes(table.size());
  parallel_for(table.size(), jobs, [&](std::size_t i) {
    GroupRow& row = out.rows[i];
    const Prepared& p = prepared[i];
    if (!row.error.empty()) return;
    const GroupRowSpec& s = row.spec;
    std::string stage = "prove on " + s.cache;
    try {
      // Phase 2: the production shape.
      {
        layout::Group S = layout::expand_group(p.source, *p.cache, s.source_params);
        layout::Group T = layout::expand_group(p.target, *p.cache, s.target_params);
        prove::GroupProof g = prove::prove_group(S, T, *p.cache, prove_options);
        row.grade = g.proof.grade;
        row.reason = g.proof.reason;
        row.unblocked_by = g.proof.unblocked_by;
        row.prove_ms = g.proof.ms;
        row.assignment = prove::group_to_json(g)["assignment"];
        row.counterexample = deciding_counterexample(g.proof);
      }
      // Phase 3: where both groups fit and are enumerable.
      stage = "cross-check shape";
      spec::CacheShape shape = row_small(small, s.cross_check_params);
      auto expand = [&](const spec::CacheShape& on) {
        return std::pair{enumerate::enumerate_group(layout::expand_group(p.source, on, s.source_params), on),
                         enumerate::enumerate_group(layout::expand_group(p.target, on, s.target_params), on)};
      };
      auto groups = expand(shape);
      if (!enumerated(groups.first) || !enumerated(groups.second)) {
        enumerate::ShapeChoice c = enumerate::cross_check_shape(spec::with_params(*p.source, s.source_params, p.source->name),
                                                                spec::with_params(*p.target, s.target_params, p.target->name),
                                                                shape, *p.cache);
        if (c.shape && c.shape->name != shape.name) {
          shape = *c.shape;
          groups = expand(shape);
        } else if (!c.shape) {
          row.cross.not_checked = c.why_not;
        }
      }
      row.cross_check_cache = shape.name;
      shapes[i] = shape;
      // Phase 4: the group proof and the group cross-check on that shape.
      stage = "prove on " + shape.name;
      prove::GroupProof q = prove::prove_group(groups.first.group, groups.second.group, shape, prove_options);
      row.small_grade = q.proof.grade;
      row.small_reason = q.proof.reason;
      stage = "cross-check on " + shape.name;
      if (row.cross.not_checked.empty()) row.cross = enumerate::cross_check_group(groups.first, groups.second);
    } catch (const std::logic_error& e) {
      // prove::InternalError, enumerate::OracleError and the like: the row's failure, as in the matrix. Bad
      // input (spec::SpecError) is the run's.
      row.error = stage + ": " + e.what();
    } catch (const std::bad_alloc&) {
      row.error = stage + ": out of memory";
    }
  });
  for (std::size_t i = 0; i < table.size(); ++i)
    if (!shapes[i].name.empty()) out.caches.emplace(shapes[i].name, shapes[i]);
  for (const auto& [name, shape] : production) out.caches.emplace(name, shape);
  return out;
}

GroupRowCounts count_group_rows(const std::vector<GroupRow>& rows) {
  GroupRowCounts c;
  for (const auto& r : rows) {
    ++c.rows;
    if (!r.error.empty()) {
      ++c.errors;
      continue;
    }
    ++c.grades[verdict::grade_name(r.grade)];
    ++c.reasons[verdict::info(r.reason).code];
    if (!r.agree()) ++c.disagree;
    if (r.grade == verdict::Grade::Unknown || r.small_grade == verdict::Grade::Unknown) ++c.unknown;
    if (r.cross_checked()) {
      ++c.cross_checked_on[r.cross_check_cache];
      c.positions_checked += r.cross.positions_checked;
    } else {
      ++c.not_cross_checked;
    }
  }
  return c;
}

spec::Json group_row_json(const GroupRow& r) {
  return spec::Json{{"source", r.spec.source},
                    {"source_params", params_json(r.spec.source_params)},
                    {"target", r.spec.target},
                    {"target_params", params_json(r.spec.target_params)},
                    {"cache", r.spec.cache},
                    {"grade", verdict::grade_name(r.grade)},
                    {"reason", verdict::info(r.reason).code},
                    {"unblocked_by", r.unblocked_by.empty() ? spec::Json(nullptr) : spec::Json(r.unblocked_by)},
                    {"assignment", r.assignment},
                    {"prove_ms", static_cast<double>(static_cast<std::int64_t>(r.prove_ms * 10 + 0.5)) / 10},
                    {"positions_checked", r.cross.positions_checked},
                    {"counterexample", r.counterexample},
                    {"cross_check", cross_check_json(r.cross_check_cache, r.cross, r.small_grade, r.small_reason, r.error.empty())},
                    {"error", r.error.empty() ? spec::Json(nullptr) : spec::Json(r.error)}};
}

spec::Json group_row_counts_json(const GroupRowCounts& c) {
  spec::Json grades = spec::Json::object(), reasons = spec::Json::object();
  for (const char* g : {"EXACT_BYTE", "EXACT_TOKEN", "SUBSET", "NOT_EXACT", "REFUSED", "UNKNOWN"}) {
    auto it = c.grades.find(g);
    grades[g] = it == c.grades.end() ? 0 : it->second;
  }
  for (const auto& [k, v] : c.reasons) reasons[k] = v;
  return spec::Json{{"rows", c.rows},
                    {"grades", grades},
                    {"reasons", reasons},
                    {"cross_checked_on", c.cross_checked_on},
                    {"not_cross_checked", c.not_cross_checked},
                    {"positions_checked", c.positions_checked},
                    {"disagree", c.disagree},
                    {"unknown", c.unknown},
                    {"internal_errors", c.errors}};
}

std::string format_group_rows(const std::vector<GroupRow>& rows) {
  std::ostringstream out;
  out << "group rows (" << rows.size() << "): rank families moved between group sizes; proof on the row's shape, "
         "group cross-check by enumeration on a small one\n";
  for (const auto& r : rows) {
    if (!r.error.empty()) {
      out << "  ERROR        " << group_row_key(r.spec) << ": " << r.error << "\n";
      continue;
    }
    char head[64];
    std::snprintf(head, sizeof head, "  %-11s  %-18s ", verdict::grade_name(r.grade).c_str(), verdict::info(r.reason).code);
    out << head << group_row_key(r.spec) << " (" << r.assignment.size() << " rank pair(s)); ";
    if (!r.cross_checked()) out << "NOT CROSS-CHECKED: " << r.cross.not_checked;
    else if (!r.agree())
      out << "DISAGREE on " << r.cross_check_cache << ": prover " << verdict::grade_name(r.small_grade) << " ["
          << verdict::info(r.small_reason).code << "], cross-check " << verdict::grade_name(r.cross.grade) << " ["
          << verdict::info(r.cross.reason).code << "]";
    else out << "cross-check on " << r.cross_check_cache << " agrees (" << verdict::grade_name(r.cross.grade) << ")";
    out << "\n";
  }
  return out.str();
}

}  // namespace kvlayout::certificate
