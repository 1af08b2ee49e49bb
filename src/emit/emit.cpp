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

std::string emit_kernel(const prove::Proof& proof, const EmitOptions& options) {
  const std::string& name = options.name;
  bool identifier = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_');
  for (char c : name) identifier = identifier && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (!identifier) throw spec::SpecError("", "--name", "\"" + name + "\"", "a C identifier (letters, digits, _)");
  Plan plan = make_plan(*proof.source_bound, *proof.target_bound);
  if (options.target == Target::Cuda) return cuda_kernel(proof, plan, options);
  return options.naive ? cpu_naive_kernel(proof, plan, options) : cpu_kernel(proof, plan, options);
}

}  // namespace kvlayout::emit
