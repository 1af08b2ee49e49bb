// Differential testing at scale: random layout pairs (tests/support/random_layout.hpp), each graded on
// the small cache by the prover with its normaliser, by the solver alone and by exhaustive enumeration
// (tests/support/differential.hpp). Reports cases per second, the outcomes, the disagreements grouped by
// their three answers, and the smallest cases of each outcome with both declarations, ready to replay.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "spec/catalog.hpp"
#include "support/differential.hpp"
#include "support/random_layout.hpp"

using namespace kvlayout;

namespace {

const char* kHelp = R"(usage: kvlayout_bench_differential [--cases N] [--seed S] [--first K] [--jobs J] [--limit-ms MS]
                                   [--timeout S] [--examples M] [--out DIR] [--in-process]
       kvlayout_bench_differential --seed S --case K [--write DIR] [--in-process]
       kvlayout_bench_differential --replay SOURCE.json TARGET.json [--in-process]

Grades random layout pairs (cases K .. K+N-1 of stream S; default 2000 cases of seed 20260517) three ways
on the small cache: prover with normaliser, solver alone, enumeration. Prints cases/s, the outcome counts,
the disagreements grouped by their three answers and the M (default 4) smallest cases per outcome.

  --jobs J       J worker processes (default 1)
  --limit-ms MS  solver limit per query (default 1000); a limit reached is UNKNOWN
  --timeout S    a path running longer is killed and reported as a timeout (default 60)
  --out DIR      write every failing case to DIR/OUTCOME/case-K/{source,target}.json and answers.txt
  --in-process   run the paths in this process (for a debugger): a crash ends the run
  --case K       one case: its declarations and its three answers; --write DIR saves the declarations
  --replay       any two declarations (their "name" is replaced), graded the same three ways

Exit: 0 every case passed (agree, unknown or not-cross-checked), 1 otherwise, 2 bad usage.
)";

struct Result {
  std::uint64_t index = 0;
  test::Verdict verdict;
  std::size_t bytes = 0;  // size of both declarations: the smallest cases are the easiest to read
};

spec::CacheShape small_cache() {
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  return spec::load_cache(catalog.find_cache("small").string());
}

Result run_case(std::uint64_t seed, std::uint64_t index, const spec::CacheShape& small, const test::DifferentialOptions& o) {
  test::RandomPair pair = test::random_pair(seed, index);
  return {index, test::grade_three_ways(pair, small, o), pair.source.dump().size() + pair.target.dump().size()};
}

// Cases first, first + jobs, ... in each of `jobs` worker processes, forked before any solver runs; each
// writes one JSON line per case to its own file, read back once all have finished.
std::vector<Result> run_cases(std::uint64_t seed, std::uint64_t first, std::uint64_t n, int jobs,
                              const spec::CacheShape& small, const test::DifferentialOptions& o) {
  const auto dir = std::filesystem::temp_directory_path() / ("kvlayout-differential-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::vector<pid_t> workers;
  for (int w = 0; w < jobs; ++w) {
    std::fflush(nullptr);
    pid_t pid = fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid > 0) {
      workers.push_back(pid);
      continue;
    }
    std::ofstream out(dir / std::to_string(w));
    std::uint64_t done = 0;
    for (std::uint64_t i = first + static_cast<std::uint64_t>(w); i < first + n; i += static_cast<std::uint64_t>(jobs)) {
      Result r = run_case(seed, i, small, o);
      out << spec::Json{{"index", r.index}, {"bytes", r.bytes}, {"verdict", r.verdict.to_json()}}.dump() << "\n" << std::flush;
      if (++done % 50 == 0) std::fprintf(stderr, "worker %d: %llu cases\n", w, static_cast<unsigned long long>(done));
    }
    out.close();
    _exit(0);
  }
  for (pid_t pid : workers) waitpid(pid, nullptr, 0);
  std::vector<Result> results;
  for (int w = 0; w < jobs; ++w) {
    std::ifstream in(dir / std::to_string(w));
    for (std::string line; std::getline(in, line);) {
      spec::Json j = spec::Json::parse(line);
      results.push_back({j["index"].get<std::uint64_t>(), test::Verdict::from_json(j["verdict"]), j["bytes"].get<std::size_t>()});
    }
  }
  std::filesystem::remove_all(dir);
  std::sort(results.begin(), results.end(), [](const Result& a, const Result& b) { return a.index < b.index; });
  return results;
}

// Up to m cases of one outcome, smallest first, one per distinct key before any key repeats.
std::vector<const Result*> examples(const std::vector<const Result*>& cases, std::size_t m) {
  std::vector<const Result*> sorted = cases, out;
  std::sort(sorted.begin(), sorted.end(), [](const Result* a, const Result* b) { return a->bytes < b->bytes; });
  std::set<std::string> keys;
  for (const Result* r : sorted)
    if (out.size() < m && keys.insert(r->verdict.key()).second) out.push_back(r);
  for (const Result* r : sorted)
    if (out.size() < m && std::find(out.begin(), out.end(), r) == out.end()) out.push_back(r);
  return out;
}

void write_case(const std::filesystem::path& dir, const test::RandomPair& pair, const test::Verdict& v) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "source.json") << pair.source.dump(2) << "\n";
  std::ofstream(dir / "target.json") << pair.target.dump(2) << "\n";
  std::ofstream(dir / "answers.txt") << test::describe(pair, v);
}

int report(const std::vector<Result>& results, std::uint64_t seed, double seconds, std::size_t m, const std::string& out) {
  std::map<test::Outcome, std::vector<const Result*>> by_outcome;
  std::map<std::string, int> by_key;
  std::vector<double> ms;
  for (const Result& r : results) {
    by_outcome[r.verdict.outcome].push_back(&r);
    if (!r.verdict.passed()) ++by_key[r.verdict.key()];
    ms.push_back(r.verdict.ms);
  }
  std::sort(ms.begin(), ms.end());
  double path_ms[3] = {0, 0, 0};
  for (const Result& r : results) {
    path_ms[0] += r.verdict.normalised.ms;
    path_ms[1] += r.verdict.solver.ms;
    path_ms[2] += r.verdict.enumeration.ms;
  }
  std::printf("%zu cases of seed %llu in %.1f s: %.2f cases/s (median %.0f ms, slowest %.0f ms per case)\n",
              results.size(), static_cast<unsigned long long>(seed), seconds, static_cast<double>(results.size()) / seconds,
              ms.empty() ? 0.0 : ms[ms.size() / 2], ms.empty() ? 0.0 : ms.back());
  std::printf("time per path: normalised %.0f s, solver only %.0f s, enumeration %.0f s\n", path_ms[0] / 1000,
              path_ms[1] / 1000, path_ms[2] / 1000);
  std::vector<const Result*> slowest;
  for (const Result& r : results) slowest.push_back(&r);
  std::sort(slowest.begin(), slowest.end(), [](const Result* a, const Result* b) { return a->verdict.ms > b->verdict.ms; });
  std::printf("slowest cases:");
  for (std::size_t i = 0; i < std::min<std::size_t>(5, slowest.size()); ++i)
    std::printf(" %llu (%.0f/%.0f/%.0f ms)", static_cast<unsigned long long>(slowest[i]->index), slowest[i]->verdict.normalised.ms,
                slowest[i]->verdict.solver.ms, slowest[i]->verdict.enumeration.ms);
  std::printf("\n\n");
  for (const auto& [o, cases] : by_outcome) {
    auto rejected = std::count_if(cases.begin(), cases.end(), [](const Result* r) { return r->verdict.enumeration.kind == test::AnswerKind::BadInput; });
    std::printf("  %-18s %6zu", test::outcome_name(o).c_str(), cases.size());
    if (o == test::Outcome::Agree) std::printf("  (%ld of them rejected as bad input by all three)", static_cast<long>(rejected));
    std::printf("\n");
  }
  std::vector<std::pair<int, std::string>> keys;
  for (const auto& [k, n] : by_key) keys.push_back({-n, k});
  std::sort(keys.begin(), keys.end());
  std::printf("\ndisagreements by answers (outcome: normalised | solver only | enumeration):\n");
  for (const auto& [n, k] : keys) std::printf("  %5d  %s\n", -n, k.c_str());
  int failed = 0;
  for (const auto& [o, cases] : by_outcome) {
    if (cases.front()->verdict.passed()) continue;
    failed += static_cast<int>(cases.size());
    std::printf("\n== %s: %zu cases; the smallest:\n", test::outcome_name(o).c_str(), cases.size());
    for (const Result* r : examples(cases, m)) {
      test::RandomPair pair = test::random_pair(seed, r->index);
      std::printf("-- case %llu\n%s", static_cast<unsigned long long>(r->index), test::describe(pair, r->verdict).c_str());
    }
    if (!out.empty())
      for (const Result* r : cases)
        write_case(std::filesystem::path(out) / test::outcome_name(o) / ("case-" + std::to_string(r->index)),
                   test::random_pair(seed, r->index), r->verdict);
  }
  return failed ? 1 : 0;
}

spec::Json read_declaration(const std::string& file, const std::string& name) {
  spec::Json j = spec::read_json_file(file);
  j["name"] = name;
  return j;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t seed = 20260517, first = 0, cases = 2000;
  std::optional<std::uint64_t> one;
  int jobs = 1;
  std::size_t m = 4;
  std::string out, write_dir;
  std::vector<std::string> replay;
  test::DifferentialOptions o;
  try {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      auto next = [&]() -> std::string {
        if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
        return argv[++i];
      };
      if (a == "--cases") cases = std::stoull(next());
      else if (a == "--seed") seed = std::stoull(next());
      else if (a == "--first") first = std::stoull(next());
      else if (a == "--jobs") jobs = std::max(1, std::stoi(next()));
      else if (a == "--limit-ms") o.limit_ms = std::stoll(next());
      else if (a == "--timeout") o.timeout_s = std::stoi(next());
      else if (a == "--examples") m = std::stoul(next());
      else if (a == "--out") out = next();
      else if (a == "--in-process") o.isolate = false;
      else if (a == "--case") one = std::stoull(next());
      else if (a == "--write") write_dir = next();
      else if (a == "--replay") replay = {next(), next()};
      else if (a == "--help" || a == "-h") {
        std::cout << kHelp;
        return 0;
      } else
        throw std::invalid_argument("unknown argument " + a);
    }
  } catch (const std::exception& e) {
    std::cerr << "kvlayout_bench_differential: " << e.what() << "\n" << kHelp;
    return 2;
  }
  if (!o.isolate) {  // as each child does: a huge allocation fails fast instead of filling the machine
    rlimit limit{rlim_t{8} << 30, rlim_t{8} << 30};
    setrlimit(RLIMIT_AS, &limit);
  }
  const spec::CacheShape small = small_cache();
  if (one || !replay.empty()) {
    test::RandomPair pair = one ? test::random_pair(seed, *one)
                                : test::RandomPair{read_declaration(replay[0], "source"), read_declaration(replay[1], "target"),
                                                   replay[0] + " -> " + replay[1]};
    test::Verdict v = test::grade_three_ways(pair, small, o);
    std::cout << test::describe(pair, v);
    if (!write_dir.empty()) write_case(write_dir, pair, v);
    return v.passed() ? 0 : 1;
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<Result> results;
  if (jobs == 1)
    for (std::uint64_t i = first; i < first + cases; ++i) {
      results.push_back(run_case(seed, i, small, o));
      if ((i - first + 1) % 50 == 0) std::fprintf(stderr, "%llu cases\n", static_cast<unsigned long long>(i - first + 1));
    }
  else
    results = run_cases(seed, first, cases, jobs, small, o);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report(results, seed, seconds, m, out);
}
