// Group-proof speed at production size: the TP/PP regroupings of the shipped families, each proven with
// the normaliser (the shipped path) and solver-only (every covers/carries/in-bounds/injective question
// sent to Z3), repetitions interleaved so machine noise falls on both alike. Reports per group pair the
// median of each and the grade. Usage: kvlayout_bench_groups [--repeat N] [--json]
#include <algorithm>
#include <chrono>
#include <iostream>
#include <string>
#include <vector>

#include "prove/group.hpp"
#include "spec/catalog.hpp"
#include "spec/json_node.hpp"

using namespace kvlayout;

namespace {

struct Case {
  std::string source, source_params, target, target_params, cache;
};

std::map<std::string, std::int64_t> params(const std::string& text) {
  std::map<std::string, std::int64_t> out;
  if (text.empty()) return out;
  auto eq = text.find('=');
  out[text.substr(0, eq)] = std::stoll(text.substr(eq + 1));
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 5;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--repeat" && i + 1 < argc) repeat = std::max(1, std::atoi(argv[++i]));
    else if (a == "--json") json = true;
  }
  const std::vector<Case> cases = {
      {"vllm-flash-nhd-tp", "tp_size=1", "vllm-flash-nhd-tp", "tp_size=2", "llama-3.1-70b"},
      {"vllm-flash-nhd-tp", "tp_size=2", "vllm-flash-nhd-tp", "tp_size=1", "llama-3.1-70b"},
      {"vllm-flash-nhd-tp", "tp_size=2", "vllm-flash-nhd-tp", "tp_size=4", "llama-3.1-70b"},
      {"vllm-flash-nhd-tp", "tp_size=4", "vllm-flash-nhd-tp", "tp_size=2", "llama-3.1-70b"},
      {"vllm-flash-nhd-tp", "tp_size=8", "vllm-flash-nhd-tp", "tp_size=2", "llama-3.1-70b"},
      {"vllm-flash-nhd-tp", "tp_size=8", "vllm-flash-nhd-tp", "tp_size=16", "llama-3.1-70b"},
      {"vllm-flash-nhd", "", "vllm-flash-nhd-tp", "tp_size=16", "llama-3.1-70b"},
      {"vllm-flash-nhd-tp", "tp_size=4", "sglang-mha-tp", "tp_size=2", "llama-3.1-70b"},
      {"vllm-flash-nhd-tp", "tp_size=1", "vllm-flash-nhd-tp", "tp_size=4", "qwen2.5-1.5b"},
      {"vllm-flash-nhd-tp", "tp_size=4", "vllm-flash-nhd-tp", "tp_size=1", "qwen2.5-1.5b"},
      {"vllm-flash-nhd-pp", "pp_size=2", "vllm-flash-nhd-pp", "pp_size=1", "llama-3.1-70b"},
      {"vllm-flash-nhd", "", "vllm-flash-nhd-pp", "pp_size=4", "llama-3.1-70b"},
  };
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  spec::Json report = spec::Json::array();
  for (const Case& c : cases) {
    std::shared_ptr<const spec::Layout> s, t;
    spec::CacheShape cache;
    try {
      s = spec::load_layout(catalog.find_layout(c.source).string());
      t = spec::load_layout(catalog.find_layout(c.target).string());
      cache = spec::load_cache(catalog.find_cache(c.cache).string());
    } catch (const std::exception& e) {
      std::cerr << "skipped " << c.source << " -> " << c.target << ": " << e.what() << "\n";
      continue;
    }
    auto sg = layout::expand_group(s, cache, params(c.source_params));
    auto tg = layout::expand_group(t, cache, params(c.target_params));
    std::vector<double> normalised, solver;
    std::string grade, solver_grade;
    std::size_t pairs = 0;
    for (int r = 0; r < repeat; ++r) {
      for (bool normalise : {true, false}) {
        prove::ProveOptions options;
        options.normalise = normalise;
        auto start = std::chrono::steady_clock::now();
        prove::GroupProof g = prove::prove_group(sg, tg, cache, options);
        double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        (normalise ? normalised : solver).push_back(ms);
        (normalise ? grade : solver_grade) = prove::grade_name(g.proof.grade);
        pairs = g.assignment.size();
      }
    }
    spec::Json row = {{"source", sg.title()}, {"target", tg.title()}, {"cache", c.cache}, {"grade", grade},
                      {"solver_only_grade", solver_grade}, {"rank_pairs", pairs},
                      {"median_ms", median(normalised)}, {"solver_only_median_ms", median(solver)}};
    report.push_back(row);
    if (!json)
      std::printf("%-40s -> %-40s %-14s %-10s %3zu pairs  %8.1f ms  solver-only %-10s %8.1f ms\n", sg.title().c_str(),
                  tg.title().c_str(), c.cache.c_str(), grade.c_str(), pairs, median(normalised), solver_grade.c_str(),
                  median(solver));
  }
  if (json) std::cout << report.dump(2) << "\n";
  return 0;
}
