#include "prove/session.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

namespace kvlayout::prove {
namespace {

// Z3 4.8.12 spends roughly 2-3 million resource units per second on these queries on the project's
// machine kind (measured); the resource limit is the deterministic limit, the watchdog a backstop.
constexpr std::uint64_t kRlimitPerMs = 2000;
// The plain SMT core answers nearly every query of this tool in a few milliseconds; what it cannot
// settle within this share of the limit goes to the default solver.
constexpr std::int64_t kFastShareMs = 100;

z3::config& configure(z3::config& c, const ProveOptions& o) {
  z3::set_param("memory_max_size", static_cast<int>(o.memory_mb));
  c.set("model", true);
  return c;
}

std::string sanitize(const std::string& s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.') ? c : '_';
  return out;
}

}  // namespace

const char* answer_name(Answer a) {
  switch (a) {
    case Answer::Sat: return "sat";
    case Answer::Unsat: return "unsat";
    case Answer::Unknown: return "unknown";
  }
  return "?";
}

Session::Session(const ProveOptions& options, std::string pair_label, std::string file_stem)
    : options_(options), pair_label_(std::move(pair_label)), file_stem_(std::move(file_stem)),
      ctx_(configure(config_, options)) {}

Answer Session::run(z3::solver& s, std::int64_t limit_ms, std::string& why) {
  limit_ms = std::max<std::int64_t>(limit_ms, 1);
  z3::params p(ctx_);
  p.set("rlimit", static_cast<unsigned>(std::min<std::uint64_t>(static_cast<std::uint64_t>(limit_ms) * kRlimitPerMs, 4000000000u)));
  s.set(p);
  std::mutex mutex;
  std::condition_variable wake;
  bool done = false;
  const auto grace = std::chrono::milliseconds(2 * limit_ms + 50);
  std::thread watchdog([&] {
    std::unique_lock lock(mutex);
    if (!wake.wait_for(lock, grace, [&] { return done; })) ctx_.interrupt();
  });
  Answer answer = Answer::Unknown;
  try {
    switch (s.check()) {
      case z3::sat: answer = Answer::Sat; break;
      case z3::unsat: answer = Answer::Unsat; break;
      case z3::unknown: answer = Answer::Unknown; why = s.reason_unknown(); break;
    }
  } catch (const z3::exception& e) {
    // Out of memory or an interrupt can surface as an exception: no answer, never a grade.
    answer = Answer::Unknown;
    why = e.msg();
  }
  {
    std::lock_guard lock(mutex);
    done = true;
  }
  wake.notify_one();
  watchdog.join();
  return answer;
}

void Session::write_smt(const z3::solver& s, const std::string& name, Answer answer) {
  std::filesystem::create_directories(*options_.smt_dir);
  char number[16];
  std::snprintf(number, sizeof number, "%03d", queries_);
  auto file = std::filesystem::path(*options_.smt_dir) / (sanitize(file_stem_) + "." + number + "." + sanitize(name) + ".smt2");
  std::ofstream out(file);
  out << "; kvlayout solver query\n"
      << "; pair: " << pair_label_ << "\n"
      << "; obligation: " << name << "\n"
      << "; expected: " << answer_name(answer) << "\n";
  out << const_cast<z3::solver&>(s).to_smt2();
}

Query::Query(Session& session, std::string name, bool record)
    : session_(session), name_(std::move(name)), record_(record), fast_(session.ctx(), z3::solver::simple()) {}

void Query::add(const z3::expr& e) {
  fast_.add(e);
  if (full_) full_->add(e);
}

Answer Query::check() { return check(session_.options().limit_ms); }

Answer Query::check(std::int64_t limit) {
  limit = std::min(limit, session_.options().limit_ms);
  unknown_reason_.clear();
  if (winner_) return session_.run(*winner_, limit, unknown_reason_);
  if (record_) ++session_.queries_;
  Answer a = session_.run(fast_, std::min(limit, kFastShareMs), unknown_reason_);
  if (a != Answer::Unknown) {
    winner_ = &fast_;
  } else {
    full_.emplace(session_.ctx());
    for (const auto& e : fast_.assertions()) full_->add(e);
    a = session_.run(*full_, limit, unknown_reason_);
    if (a != Answer::Unknown) winner_ = &*full_;
  }
  if (record_ && session_.options().smt_dir) session_.write_smt(fast_, name_, a);
  return a;
}

z3::model Query::model() { return (winner_ ? winner_ : &fast_)->get_model(); }
void Query::push() { (winner_ ? winner_ : &fast_)->push(); }
void Query::pop() { (winner_ ? winner_ : &fast_)->pop(); }

}  // namespace kvlayout::prove
