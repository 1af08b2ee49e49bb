#include "sweep_against.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace kvlayout::bench {
namespace {

std::string pair_name(const spec::Json& row) {
  return row.at("cache").get<std::string>() + " " + row.at("source").get<std::string>() + " -> " + row.at("target").get<std::string>();
}

// Sums of logarithms, made into a DriftGroup.
struct LogSum {
  std::size_t n = 0;
  double sum = 0;
  void add(double ratio) { ++n, sum += std::log(ratio); }
  DriftGroup group() const { return {n, n == 0 ? 1.0 : std::exp(sum / static_cast<double>(n))}; }
};

// The reference's rows by pair name, headline rows left out.
// @throws std::runtime_error naming the path of what is missing.
std::map<std::string, const spec::Json*> reference_rows(const spec::Json& reference) {
  if (!reference.is_object() || !reference.contains("pairs") || !reference.at("pairs").is_array())
    throw std::runtime_error("/pairs: expected the array of a kvlayout_bench_sweep --json file");
  std::map<std::string, const spec::Json*> out;
  const spec::Json& pairs = reference.at("pairs");
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const spec::Json& row = pairs[i];
    for (const char* key : {"cache", "source", "target", "threads"})
      if (!row.is_object() || !row.contains(key)) throw std::runtime_error("/pairs/" + std::to_string(i) + ": expected a field '" + key + "'");
    if (row.value("headline", false)) continue;
    out[pair_name(row)] = &row;
  }
  return out;
}

// A row's ratio to memcpy at `threads`, or a negative number where it has none.
double ratio_at(const spec::Json& row, const std::string& threads) {
  const spec::Json& t = row.at("threads");
  if (!t.contains(threads) || !t.at(threads).contains("ratio") || !t.at(threads).at("ratio").is_number()) return -1;
  return t.at(threads).at("ratio").get<double>();
}

}  // namespace

Against compare_against(const spec::Json& rows, const spec::Json& reference) {
  const std::map<std::string, const spec::Json*> before = reference_rows(reference);
  Against out;
  std::map<int, LogSum> unchanged, changed, unknown;
  std::map<std::string, std::map<int, double>> changed_ratios;  // now over reference, before the drift
  std::map<int, std::vector<double>> ratios_now;
  // Phase 1: each pair's ratio over the reference's, into its group.
  for (const spec::Json& row : rows) {
    if (row.value("headline", false)) continue;
    const std::string name = pair_name(row);
    for (const auto& [threads, t] : row.at("threads").items()) ratios_now[std::stoi(threads)].push_back(t.at("ratio").get<double>());
    const auto found = before.find(name);
    if (found == before.end()) {
      ++out.new_pairs;
      continue;
    }
    const spec::Json& old = *found->second;
    const bool known = old.contains("kernel_digest") && row.contains("kernel_digest");
    const bool same = known && old.at("kernel_digest") == row.at("kernel_digest");
    for (const auto& [threads, t] : row.at("threads").items()) {
      const double then = ratio_at(old, threads);
      if (then <= 0) continue;
      const double ratio = t.at("ratio").get<double>() / then;
      const int n = std::stoi(threads);
      (!known ? unknown : same ? unchanged : changed)[n].add(ratio);
      if (known && !same) changed_ratios[name][n] = ratio;
    }
  }
  // Phase 2: the groups, and what the drift makes of the changed pairs and of the count under 0.8x.
  for (const auto& [n, now] : ratios_now) {
    AgainstThreads& t = out.threads[n];
    t.unchanged = unchanged[n].group(), t.changed = changed[n].group(), t.unknown = unknown[n].group();
    t.drift = t.unchanged.geometric_mean;  // 1 where no pair is unchanged
    if (t.unchanged.pairs > 0 && t.changed.pairs > 0) t.changed_over_drift = t.changed.geometric_mean / t.drift;
    t.below_0_8 = static_cast<std::size_t>(std::count_if(now.begin(), now.end(), [](double r) { return r < 0.8; }));
    t.below_0_8_at_reference_state = static_cast<std::size_t>(std::count_if(now.begin(), now.end(), [&](double r) { return r / t.drift < 0.8; }));
  }
  for (auto& [name, per_threads] : changed_ratios) {
    ChangedPair c{name, {}};
    for (const auto& [n, ratio] : per_threads) c.over_drift[n] = ratio / out.threads[n].drift;
    out.changed.push_back(std::move(c));
  }
  std::sort(out.changed.begin(), out.changed.end(), [](const ChangedPair& a, const ChangedPair& b) {
    const double x = a.over_drift.empty() ? 1 : a.over_drift.begin()->second, y = b.over_drift.empty() ? 1 : b.over_drift.begin()->second;
    return x < y || (x == y && a.name < b.name);
  });
  return out;
}

spec::Json against_json(const Against& against) {
  auto group = [](const DriftGroup& g) { return spec::Json{{"pairs", g.pairs}, {"geometric_mean", g.geometric_mean}}; };
  spec::Json out = {{"new_pairs", against.new_pairs}};
  for (const auto& [n, t] : against.threads)
    out[std::to_string(n)] = {{"unchanged", group(t.unchanged)},
                              {"changed", group(t.changed)},
                              {"unknown", group(t.unknown)},
                              {"drift", t.drift},
                              {"changed_over_drift", t.changed_over_drift},
                              {"below_0_8", t.below_0_8},
                              {"below_0_8_at_reference_state", t.below_0_8_at_reference_state}};
  spec::Json changed = spec::Json::array();
  for (const ChangedPair& c : against.changed) {
    spec::Json row = {{"pair", c.name}};
    for (const auto& [n, r] : c.over_drift) row["over_drift"][std::to_string(n)] = r;
    changed.push_back(row);
  }
  out["changed_pairs"] = changed;
  return out;
}

}  // namespace kvlayout::bench
