#pragma once
// The matrix as text: one cell per ordered pair (row = source, column = target), a legend, and counts per
// grade and per reason over declared rows and over distinct equivalence classes.
#include <map>
#include <string>

#include "certificate/matrix.hpp"

namespace kvlayout::certificate {

// One letter per grade: B EXACT_BYTE, T EXACT_TOKEN, S SUBSET, N NOT_EXACT, R REFUSED, U UNKNOWN; in
// lower case when the row was not cross-checked; '!' a row whose cross-check disagrees or that hit an
// internal error.
char cell(const Row& row);

struct Counts {
  std::map<std::string, std::size_t> grades;
  std::map<std::string, std::size_t> reasons;
  std::size_t rows = 0;
};
Counts count_rows(const Matrix& m);
// Counts over one representative per equivalence class (rows between class representatives).
Counts count_classes(const Matrix& m);

std::string format_table(const Matrix& m);
std::string format_counts(const Matrix& m);

}  // namespace kvlayout::certificate
