#include "prove/model.hpp"

#include <chrono>
#include <map>
#include <set>
#include <stdexcept>

namespace kvlayout::prove {

std::int64_t model_int(const z3::model& m, const z3::expr& e) {
  z3::expr v = m.eval(e, true);
  std::int64_t out = 0;
  if (!v.is_numeral_i64(out)) throw std::logic_error("model value is not a 64-bit integer: " + v.to_string());
  return out;
}

std::vector<std::int64_t> model_coords(const z3::model& m, const SymbolicPosition& p) {
  std::vector<std::int64_t> out;
  for (const auto& c : p.coords) out.push_back(model_int(m, c));
  return out;
}

layout::BlockTables tables_from_model(const Encoder& encoder, const z3::model& m) {
  return tables_from_model(encoder.bound(), encoder.lookups(), m);
}

layout::BlockTables tables_from_model(const layout::BoundLayout& bound, const std::vector<Encoder::LookupTerm>& lookups,
                                      const z3::model& m) {
  std::vector<std::map<std::int64_t, std::int64_t>> fixed(bound.tables.size());
  for (const auto& l : lookups) {
    const auto& t = bound.tables[static_cast<std::size_t>(l.table)];
    std::int64_t entry = model_int(m, l.entry);
    if (entry < 0 || entry >= t.length) continue;  // an out-of-table read: any table shows it
    std::int64_t value = model_int(m, l.value);
    auto [it, inserted] = fixed[static_cast<std::size_t>(l.table)].emplace(entry, value);
    if (!inserted && it->second != value) throw std::logic_error("model reads two values from one table entry");
  }
  try {
    return layout::tables_with(bound, fixed);
  } catch (const std::invalid_argument& e) {
    throw std::logic_error(std::string("model tables contradict the table axioms: ") + e.what());
  }
}

z3::model minimise(Query& s, const std::vector<z3::expr>& vars) {
  // Bounded effort: a counterexample is shown either way; minimising only makes it easier to read.
  // Each step gets a small limit; a step the solver cannot answer quickly ends the search for that value.
  constexpr std::int64_t kStepMs = 50;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(400);
  z3::model best = s.model();
  auto pin = [&](const z3::expr& var, std::int64_t v) { s.add(var == s.ctx().int_val(static_cast<int64_t>(v))); };
  for (const auto& var : vars) {
    std::int64_t hi = model_int(best, var);
    if (hi <= 0 || std::chrono::steady_clock::now() >= deadline) {
      pin(var, hi);
      continue;
    }
    // Most counterexamples have a 0 here: one step settles it, and pinning simplifies later steps.
    s.push();
    pin(var, 0);
    if (s.check(kStepMs) == Answer::Sat) {
      best = s.model();
      continue;  // keep the pin (this scope is never popped)
    }
    s.pop();
    std::int64_t lo = 1;
    while (lo < hi && std::chrono::steady_clock::now() < deadline) {
      std::int64_t mid = lo + (hi - lo) / 2;
      s.push();
      s.add(var <= s.ctx().int_val(static_cast<int64_t>(mid)));
      Answer a = s.check(kStepMs);
      if (a == Answer::Sat) {
        best = s.model();
        hi = model_int(best, var);
      } else if (a == Answer::Unsat) {
        lo = mid + 1;
      }
      s.pop();
      if (a == Answer::Unknown) break;
    }
    pin(var, model_int(best, var));
  }
  return best;
}

}  // namespace kvlayout::prove
