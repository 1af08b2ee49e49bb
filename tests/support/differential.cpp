#include "support/differential.hpp"

#include <cxxabi.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <typeinfo>

#include "certificate/matrix.hpp"
#include "enumerate/cross_check.hpp"
#include "prove/internal_error.hpp"
#include "prove/proof.hpp"
#include "prove/report.hpp"
#include "spec/error.hpp"
#include "support/temp_dir.hpp"

namespace kvlayout::test {
namespace {

const char* kKindNames[] = {"grade", "bad input", "internal error", "exception", "crash", "timeout"};
const char* kOutcomeNames[] = {"false-exact", "crash",       "timeout",           "internal-error", "exception", "bad-input",
                               "grade",       "obligations", "not-cross-checked", "unknown",        "agree"};

// A child may allocate this much address space: a declaration with a huge allocation then fails fast
// with std::bad_alloc instead of filling a machine that other jobs share.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif
constexpr rlim_t kChildMemory = rlim_t{8} << 30;

Answer failure(AnswerKind kind, std::string detail) {
  Answer a;
  a.kind = kind;
  a.detail = std::move(detail);
  return a;
}

std::string type_name(const std::exception& e) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(typeid(e).name(), nullptr, nullptr, &status), std::free);
  return status == 0 && name ? name.get() : typeid(e).name();
}

// Runs one path, turning every exception into the answer it stands for.
Answer guarded(const std::function<Answer()>& path) {
  try {
    return path();
  } catch (const spec::SpecError& e) {
    return failure(AnswerKind::BadInput, e.path + ": found " + e.found);  // without the scratch file's name
  } catch (const prove::InternalError& e) {
    return failure(AnswerKind::InternalError, e.what());
  } catch (const enumerate::OracleError& e) {
    return failure(AnswerKind::InternalError, std::string("oracle: ") + e.what());
  } catch (const std::exception& e) {
    return failure(AnswerKind::Exception, type_name(e) + ": " + e.what());
  } catch (...) {
    return failure(AnswerKind::Exception, "an exception not derived from std::exception");
  }
}

void write_all(int fd, const std::string& s) {
  for (std::size_t done = 0; done < s.size();) {
    ssize_t n = write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

// Runs one path in a child process and reads its answer back as JSON; a signal or a hang is the answer.
Answer isolated(const std::function<Answer()>& path, int timeout_s) {
  int fd[2];
  if (pipe(fd) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  std::fflush(nullptr);  // nothing buffered is written twice
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    close(fd[0]);
    // A test framework's handlers (Catch2 reports a fatal signal as a failed test) belong to the parent:
    // the child dies plainly, and the parent reports which path crashed.
    for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL, SIGTRAP}) std::signal(sig, SIG_DFL);
    if (!kAddressSanitizer) {  // ASan reserves terabytes of shadow address space: no RLIMIT_AS under it
      rlimit limit{kChildMemory, kChildMemory};
      setrlimit(RLIMIT_AS, &limit);
    }
    write_all(fd[1], guarded(path).to_json().dump());
    _exit(0);  // no destructors or atexit handlers of the parent's state
  }
  close(fd[1]);
  std::string text;
  bool timed_out = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    pollfd p{fd[0], POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000))) <= 0) continue;
    char buffer[1 << 16];
    ssize_t n = read(fd[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  close(fd[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) return failure(AnswerKind::Timeout, "still running after " + std::to_string(timeout_s) + " s");
  if (WIFSIGNALED(status))
    return failure(AnswerKind::Crash, "signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || text.empty())
    return failure(AnswerKind::Crash, "exit status " + std::to_string(WEXITSTATUS(status)) + " without an answer");
  return Answer::from_json(spec::Json::parse(text));
}

Answer from_proof(const prove::Proof& p) {
  Answer a;
  a.kind = AnswerKind::Grade;
  a.grade = p.grade;
  a.reason = p.reason;
  if (const prove::ObligationResult* d = p.deciding()) a.detail = d->name + "(" + prove::side_name(d->side) + "): " + d->detail;
  for (const auto& o : p.obligations)
    a.obligations.push_back({o.name + "(" + prove::side_name(o.side) + ")", prove::status_name(o.status)});
  return a;
}

Answer prove_path(const std::shared_ptr<const spec::Layout>& s, const std::shared_ptr<const spec::Layout>& t,
                  const spec::CacheShape& small, bool normalise, std::int64_t limit_ms) {
  prove::ProveOptions options;  // no side cache: every case's files are named source.json and target.json
  options.normalise = normalise;
  options.limit_ms = limit_ms;
  prove::Proof p = prove::prove(s, t, small, options);
  // The report is part of what a user gets from `kvlayout prove`; it must not fail either.
  (void)prove::format_text(p);
  (void)prove::to_json(p).dump();
  return from_proof(p);
}

Answer enumeration_path(const std::shared_ptr<const spec::Layout>& s, const std::shared_ptr<const spec::Layout>& t,
                        const spec::CacheShape& small) {
  enumerate::CrossCheck c = enumerate::cross_check(enumerate::enumerate_layout(s, small), enumerate::enumerate_layout(t, small));
  Answer a;
  a.kind = AnswerKind::Grade;
  a.grade = c.grade;
  a.reason = c.reason;
  if (!c.not_checked.empty()) a.detail = "not cross-checked: " + c.not_checked;
  for (const auto& f : c.findings)
    if (f.reason == c.reason) {
      a.detail = f.name + "(" + prove::side_name(f.side) + "): " + f.detail;
      break;
    }
  return a;
}

// The campaign's rule for a proof and a cross-check on one shape (certificate::Row::agree), not a copy of it.
bool agrees(const Answer& proof, const Answer& cross) {
  certificate::Row row;
  row.small_grade = proof.grade;
  row.small_reason = proof.reason;
  row.cross.grade = cross.grade;
  row.cross.reason = cross.reason;
  return row.agree();
}

// normaliser_test.cpp's rule: the same obligations, each with the same status. An unknown status matches
// any, and an obligation one prover skipped after an unknown prerequisite (padding after injective) is not
// compared.
bool same_obligations(const Answer& a, const Answer& b) {
  std::map<std::string, std::string> in_a(a.obligations.begin(), a.obligations.end()), in_b(b.obligations.begin(), b.obligations.end());
  bool unknown = false;
  for (const auto& m : {in_a, in_b})
    for (const auto& [name, status] : m) unknown = unknown || status == "unknown";
  for (const auto& [name, status] : in_a) {
    auto it = in_b.find(name);
    if (it == in_b.end()) {
      if (!unknown) return false;
    } else if (it->second != status && status != "unknown" && it->second != "unknown") {
      return false;
    }
  }
  return unknown || in_a.size() == in_b.size();
}

}  // namespace

std::string Answer::brief() const {
  switch (kind) {
    case AnswerKind::Grade: return prove::grade_name(grade) + " [" + prove::info(reason).code + "]";
    case AnswerKind::Exception: return "exception " + detail.substr(0, detail.find(": "));
    case AnswerKind::Crash: return "crash (" + detail + ")";
    default: return kKindNames[static_cast<int>(kind)];
  }
}

spec::Json Answer::to_json() const {
  spec::Json obl = spec::Json::array();
  for (const auto& [name, status] : obligations) obl.push_back({name, status});
  return {{"kind", static_cast<int>(kind)}, {"grade", prove::grade_name(grade)}, {"reason", prove::info(reason).code},
          {"detail", detail}, {"obligations", obl}, {"ms", ms}};
}

Answer Answer::from_json(const spec::Json& j) {
  Answer a;
  a.kind = static_cast<AnswerKind>(j.at("kind").get<int>());
  a.grade = prove::parse_grade(j.at("grade").get<std::string>()).value_or(prove::Grade::Unknown);
  for (const auto& r : prove::reason_table())
    if (j.at("reason").get<std::string>() == r.code) a.reason = r.reason;
  a.detail = j.at("detail").get<std::string>();
  a.ms = j.value("ms", 0.0);
  for (const auto& o : j.at("obligations")) a.obligations.push_back({o.at(0).get<std::string>(), o.at(1).get<std::string>()});
  return a;
}

std::string outcome_name(Outcome o) { return kOutcomeNames[static_cast<int>(o)]; }

Outcome classify(const Answer& n, const Answer& z, const Answer& e) {
  auto exact = [](const Answer& a) { return a.kind == AnswerKind::Grade && prove::is_exact(a.grade); };
  auto refutes = [](const Answer& a) {
    return a.kind == AnswerKind::BadInput ||
           (a.kind == AnswerKind::Grade && a.grade != prove::Grade::Unknown && !prove::is_exact(a.grade));
  };
  if ((exact(n) || exact(z)) && refutes(e)) return Outcome::FalseExact;
  auto count = [&](AnswerKind k) { return (n.kind == k) + (z.kind == k) + (e.kind == k); };
  if (count(AnswerKind::Crash)) return Outcome::Crash;
  if (count(AnswerKind::Timeout)) return Outcome::Timeout;
  if (count(AnswerKind::InternalError)) return Outcome::InternalError;
  if (count(AnswerKind::Exception)) return Outcome::Exception;
  if (count(AnswerKind::BadInput) == 3) return Outcome::Agree;
  if (count(AnswerKind::BadInput)) return Outcome::BadInput;
  const auto unknown = prove::Grade::Unknown;
  for (const Answer* p : {&n, &z})
    if (p->grade != unknown && e.grade != unknown && !agrees(*p, e)) return Outcome::Grade;
  if (n.grade != unknown && z.grade != unknown && !agrees(n, z)) return Outcome::Grade;
  if (!same_obligations(n, z)) return Outcome::Obligations;
  if (e.grade == unknown) return Outcome::NotChecked;  // the cross-check's only UNKNOWN: a layout too large
  return n.grade == unknown || z.grade == unknown ? Outcome::Unknown : Outcome::Agree;
}

std::string Verdict::key() const {
  return outcome_name(outcome) + ": " + normalised.brief() + " | " + solver.brief() + " | " + enumeration.brief();
}

spec::Json Verdict::to_json() const {
  return {{"normalised", normalised.to_json()}, {"solver", solver.to_json()}, {"enumeration", enumeration.to_json()},
          {"outcome", static_cast<int>(outcome)}, {"ms", ms}};
}

Verdict Verdict::from_json(const spec::Json& j) {
  Verdict v;
  v.normalised = Answer::from_json(j.at("normalised"));
  v.solver = Answer::from_json(j.at("solver"));
  v.enumeration = Answer::from_json(j.at("enumeration"));
  v.outcome = static_cast<Outcome>(j.at("outcome").get<int>());
  v.ms = j.at("ms").get<double>();
  return v;
}

Verdict grade_three_ways(const RandomPair& pair, const spec::CacheShape& small, const DifferentialOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  TempDir dir;
  const std::string source_file = dir.write("source.json", pair.source.dump(2));
  const std::string target_file = dir.write("target.json", pair.target.dump(2));
  Verdict v;
  // Loading is shared by all three paths: a declaration it rejects is rejected by all three alike.
  std::shared_ptr<const spec::Layout> s, t;
  Answer loaded = guarded([&] {
    s = spec::load_layout(source_file);
    t = spec::load_layout(target_file);
    return failure(AnswerKind::Grade, "loaded");
  });
  if (loaded.kind != AnswerKind::Grade) {
    v.normalised = v.solver = v.enumeration = loaded;
  } else {
    auto run = [&](const std::function<Answer()>& path) {
      const auto begin = std::chrono::steady_clock::now();
      Answer a = options.isolate ? isolated(path, options.timeout_s) : guarded(path);
      a.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count();
      return a;
    };
    v.normalised = run([&] { return prove_path(s, t, small, true, options.limit_ms); });
    v.solver = run([&] { return prove_path(s, t, small, false, options.limit_ms); });
    v.enumeration = run([&] { return enumeration_path(s, t, small); });
  }
  v.outcome = classify(v.normalised, v.solver, v.enumeration);
  v.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return v;
}

std::string describe(const RandomPair& pair, const Verdict& v) {
  auto line = [](const char* label, const Answer& a) {
    const bool said = a.detail.empty() || a.kind == AnswerKind::Crash;  // a crash's brief is all there is
    return std::string(label) + a.brief() + (said ? "" : "  -- " + a.detail) + "\n";
  };
  std::string differ;
  std::map<std::string, std::string> solver(v.solver.obligations.begin(), v.solver.obligations.end());
  for (const auto& [name, status] : v.normalised.obligations)
    if (solver.count(name) && solver[name] != status)
      differ += "  " + name + ": normalised " + status + ", solver only " + solver[name] + "\n";
  return "outcome " + outcome_name(v.outcome) + "; " + pair.recipe + "\n" +  //
         "source.json: " + pair.source.dump() + "\n" +                        //
         "target.json: " + pair.target.dump() + "\n" +                        //
         line("  normalised:  ", v.normalised) + line("  solver only: ", v.solver) + line("  enumeration: ", v.enumeration) +
         differ;
}

}  // namespace kvlayout::test
