#pragma once
// One Z3 context per proof, and the only place solver queries run. Every query is a small portfolio:
// Z3's plain SMT core (no tactic front end; ~2 ms on these queries) under a short resource limit, then
// the default solver (its preprocessing settles the rest) under the full limit. Every limit is a
// deterministic resource limit backed by a wall-clock watchdog (Z3 4.8.12's own `timeout` can hang),
// every answer is sat, unsat or unknown, and every query can be written as SMT-LIB2 for replay.
#include <memory>
#include <optional>
#include <string>
#include <z3++.h>

#include "prove/options.hpp"

namespace kvlayout::prove {

enum class Answer { Sat, Unsat, Unknown };
const char* answer_name(Answer a);  // "sat", "unsat", "unknown"

class Session {
 public:
  // `pair_label` names the pair in SMT-LIB2 headers, `file_stem` starts each written file's name.
  Session(const ProveOptions& options, std::string pair_label, std::string file_stem);

  z3::context& ctx() { return ctx_; }
  const ProveOptions& options() const { return options_; }
  const std::string& pair_label() const { return pair_label_; }
  int queries() const { return queries_; }

 private:
  friend class Query;
  // Runs s.check() with a resource limit of `limit_ms` and a watchdog; on Unknown, `why` says why.
  Answer run(z3::solver& s, std::int64_t limit_ms, std::string& why);
  void write_smt(const z3::solver& s, const std::string& name, Answer answer);

  ProveOptions options_;
  std::string pair_label_;
  std::string file_stem_;
  z3::config config_;
  z3::context ctx_;
  int queries_ = 0;
};

// One solver question. `record` false for helper questions (counterexample minimisation), which are
// neither counted nor written as SMT-LIB2.
class Query {
 public:
  Query(Session& session, std::string name, bool record = true);

  void add(const z3::expr& e);
  Answer check();
  // A check under a smaller limit than the session's (for helper steps such as minimisation).
  Answer check(std::int64_t limit_ms);
  // Why the last check answered Unknown (Z3's reason, or the exception that stopped it): each answer
  // carries its own reason, so a result never reports another query's.
  const std::string& unknown_reason() const { return unknown_reason_; }
  // After Sat: the model of the solver that answered.
  z3::model model();
  // Scoped assertions on the solver that answered the first check (for minimisation).
  void push();
  void pop();
  z3::context& ctx() { return session_.ctx(); }
  Session& session() { return session_; }

 private:
  Session& session_;
  std::string name_;
  bool record_;
  z3::solver fast_;
  std::optional<z3::solver> full_;
  z3::solver* winner_ = nullptr;
  std::string unknown_reason_;
};

}  // namespace kvlayout::prove
