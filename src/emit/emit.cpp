#include "emit/emit.hpp"

#include <cctype>

#include "emit/cpu.hpp"
#include "emit/cuda.hpp"
#include "emit/plan.hpp"
#include "spec/error.hpp"

namespace kvlayout::emit {

bool emittable(prove::Grade grade, bool allow_not_exact) {
  switch (grade) {
    case prove::Grade::ExactByte:
    case prove::Grade::ExactToken:
    case prove::Grade::Subset: return true;
    case prove::Grade::NotExact: return allow_not_exact;
    default: return false;
  }
}

namespace {

// @post returns only when the proof licenses the move (see emit_kernel).
void require_license(const prove::Proof& proof, bool allow_not_exact) {
  const std::string pair = proof.source_layout->name + " -> " + proof.target_layout->name;
  if (!emittable(proof.grade, allow_not_exact))
    throw NotEmittable(pair + " is " + prove::grade_name(proof.grade) + ", which is not emitted" +
                       (proof.grade == prove::Grade::NotExact ? " unless NOT_EXACT moves are allowed" : ""));
  std::vector<prove::ObligationResult> all = proof.preconditions;
  all.insert(all.end(), proof.obligations.begin(), proof.obligations.end());
  if (prove::grade_of(all).first != proof.grade)
    throw NotEmittable(pair + ": the grade " + prove::grade_name(proof.grade) + " is not what its obligations give");
  struct Needed {
    const char* name;
    prove::Side side;
  };
  for (const Needed& n : {Needed{"fits", prove::Side::Pair}, Needed{"fits", prove::Side::Source}, Needed{"fits", prove::Side::Target},
                          Needed{"defined", prove::Side::Source}, Needed{"defined", prove::Side::Target},
                          Needed{"in-bounds", prove::Side::Source}, Needed{"in-bounds", prove::Side::Target},
                          Needed{"injective", prove::Side::Source}, Needed{"injective", prove::Side::Target},
                          Needed{"covers", prove::Side::Pair}}) {
    bool proved = false;
    for (const auto& r : all)
      proved = proved || (r.name == n.name && r.side == n.side && r.status == prove::Status::Proved);
    if (!proved)
      throw NotEmittable(pair + ": " + n.name + "(" + prove::side_name(n.side) + ") is not proved, and the move relies on it");
  }
}

}  // namespace

std::string emit_kernel(const prove::Proof& proof, const EmitOptions& options) {
  require_license(proof, options.allow_not_exact);
  const std::string& name = options.name;
  bool identifier = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_');
  for (char c : name) identifier = identifier && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (!identifier) throw spec::SpecError("", "--name", "\"" + name + "\"", "a C identifier (letters, digits, _)");
  // Only the planned CPU kernel builds inverted tables and instance groups (kCpuPlanOptions).
  const bool planned_cpu = options.target == Target::Cpu && !options.naive;
  Plan plan = make_plan(*proof.source_bound, *proof.target_bound, planned_cpu ? kCpuPlanOptions : PlanOptions{});
  if (options.target == Target::Cuda) return cuda_kernel(proof, plan, options);
  return options.naive ? cpu_naive_kernel(proof, plan, options) : cpu_kernel(proof, plan, options);
}

}  // namespace kvlayout::emit
