// Prover speed over the shipped specs: every ordered pair of same-content engine layouts on each given
// cache shape (default llama-3.1-70b and qwen2.5-7b for per-head layouts, deepseek-v3 for MLA layouts).
// Reports per-pair median (of --repeat runs) and the distribution over pairs, UNKNOWN count, and peak
// memory of the process. Usage: kvlayout_bench_prove [--repeat N] [--json] [CACHE...]
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "prove/proof.hpp"
#include "spec/catalog.hpp"
#include "spec/json_node.hpp"

using namespace kvlayout;

namespace {

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5)];
}

}  // namespace

int main(int argc, char** argv) {
  int repeat = 3;
  bool json = false;
  std::vector<std::string> caches;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--repeat" && i + 1 < argc) repeat = std::max(1, std::atoi(argv[++i]));
    else if (a == "--json") json = true;
    else caches.push_back(a);
  }
  if (caches.empty()) caches = {"llama-3.1-70b", "qwen2.5-7b", "deepseek-v3"};

  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  std::vector<std::shared_ptr<const spec::Layout>> engines;
  for (const auto& f : catalog.layout_files()) {
    auto l = spec::load_layout(f.string());
    if (!l->control) engines.push_back(l);
  }
  spec::Json report = spec::Json::array();
  for (const std::string& cache_name : caches) {
    spec::CacheShape cache = spec::load_cache(catalog.find_cache(cache_name).string());
    std::vector<double> times;
    std::map<std::string, int> grades;
    int unknown = 0;
    std::string slowest;
    double slowest_ms = 0;
    for (const auto& s : engines) {
      for (const auto& t : engines) {
        if (s->content.name != t->content.name) continue;
        layout::BoundLayout probe = layout::bind(s, cache);
        if (!probe.fits()) continue;  // e.g. per-head layouts on an MLA cache shape
        std::vector<double> runs;
        prove::Grade grade = prove::Grade::Unknown;
        for (int r = 0; r < repeat; ++r) {
          auto start = std::chrono::steady_clock::now();
          prove::Proof p = prove::prove(s, t, cache);
          runs.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
          grade = p.grade;
        }
        double median = percentile(runs, 0.5);
        times.push_back(median);
        ++grades[prove::grade_name(grade)];
        if (grade == prove::Grade::Unknown) ++unknown;
        if (median > slowest_ms) {
          slowest_ms = median;
          slowest = s->name + " -> " + t->name;
        }
      }
    }
    struct rusage usage {};
    getrusage(RUSAGE_SELF, &usage);
    spec::Json row = {{"cache", cache_name},
                      {"pairs", times.size()},
                      {"unknown", unknown},
                      {"grades", grades},
                      {"median_ms", percentile(times, 0.5)},
                      {"p90_ms", percentile(times, 0.9)},
                      {"max_ms", times.empty() ? 0 : *std::max_element(times.begin(), times.end())},
                      {"slowest", slowest},
                      {"peak_rss_mib", static_cast<double>(usage.ru_maxrss) / 1024.0}};
    report.push_back(row);
    if (!json) {
      std::printf("%-14s pairs %4zu  unknown %d  median %6.1f ms  p90 %6.1f ms  max %7.1f ms (%s)  peak RSS %.0f MiB\n",
                  cache_name.c_str(), times.size(), unknown, row["median_ms"].get<double>(), row["p90_ms"].get<double>(),
                  row["max_ms"].get<double>(), slowest.c_str(), row["peak_rss_mib"].get<double>());
      std::printf("               grades:");
      for (const auto& [g, n] : grades) std::printf(" %s %d", g.c_str(), n);
      std::printf("\n");
      std::fflush(stdout);
    }
  }
  if (json) std::cout << report.dump(2) << "\n";
  return 0;
}
