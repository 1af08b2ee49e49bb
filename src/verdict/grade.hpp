#pragma once
// The verdict on an ordered pair S -> T. Worst finding wins, in this order:
// REFUSED > NOT_EXACT > SUBSET > EXACT_TOKEN > EXACT_BYTE. UNKNOWN (a solver limit) is never exact.
#include <optional>
#include <string>

namespace kvlayout::verdict {

enum class Grade { ExactByte, ExactToken, Subset, NotExact, Refused, Unknown };

std::string grade_name(Grade g);  // "EXACT_BYTE", ...
std::optional<Grade> parse_grade(const std::string& name);
bool is_exact(Grade g);           // EXACT_BYTE or EXACT_TOKEN
// 0 (EXACT_BYTE) .. 4 (REFUSED); UNKNOWN has no severity.
int severity(Grade g);

}  // namespace kvlayout::verdict

// prove, its reports and the certificate name these types prove::Grade, prove::Reason, ...: the verdict
// vocabulary is what a proof speaks. The layer itself depends on nothing above layout.
namespace kvlayout::prove {
using namespace kvlayout::verdict;
}  // namespace kvlayout::prove
