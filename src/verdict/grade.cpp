#include "verdict/grade.hpp"

namespace kvlayout::verdict {

std::string grade_name(Grade g) {
  switch (g) {
    case Grade::ExactByte: return "EXACT_BYTE";
    case Grade::ExactToken: return "EXACT_TOKEN";
    case Grade::Subset: return "SUBSET";
    case Grade::NotExact: return "NOT_EXACT";
    case Grade::Refused: return "REFUSED";
    case Grade::Unknown: return "UNKNOWN";
  }
  return "?";
}

std::optional<Grade> parse_grade(const std::string& name) {
  for (Grade g : {Grade::ExactByte, Grade::ExactToken, Grade::Subset, Grade::NotExact, Grade::Refused, Grade::Unknown})
    if (grade_name(g) == name) return g;
  return std::nullopt;
}

bool is_exact(Grade g) { return g == Grade::ExactByte || g == Grade::ExactToken; }

int severity(Grade g) {
  switch (g) {
    case Grade::ExactByte: return 0;
    case Grade::ExactToken: return 1;
    case Grade::Subset: return 2;
    case Grade::NotExact: return 3;
    case Grade::Refused: return 4;
    case Grade::Unknown: return -1;
  }
  return -1;
}

}  // namespace kvlayout::verdict
