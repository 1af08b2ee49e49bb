#pragma once
// The capability backlog: every non-exact row grouped by what would make it exact ("44 pairs: gather the
// other TP ranks; ..."), most rows first — the list of work that would make more moves exact.
#include <map>
#include <string>
#include <vector>

#include "verdict/grade.hpp"

namespace kvlayout::report {

struct BacklogRow {
  std::string source, target;
  prove::Grade grade;
  std::string capability;  // "" when the row names none
};

struct BacklogItem {
  std::string capability;              // the capability's head (capability_head); "" for rows naming none
  std::vector<BacklogRow> rows;        // in the order given
  std::map<std::string, int> grades;   // grade name -> rows
};

// A capability without its pair-specific tail: the text before its first ": " outside parentheses
// ("gather the other tensor-parallel ranks of X (tp_rank 1 holds head 4..7 of 0..7): Y needs ..." -> the
// part before ": Y needs"), so that rows needing the same work are counted together.
std::string capability_head(const std::string& capability);

// @post every non-exact row of `rows` is in exactly one item, by capability_head; items by row count,
// descending, then by name.
std::vector<BacklogItem> capability_backlog(const std::vector<BacklogRow>& rows);

// "Capability backlog (N non-exact rows):\n  44 pairs (REFUSED 44): gather the other TP ranks\n ..."
std::string format_backlog(const std::vector<BacklogItem>& items);

}  // namespace kvlayout::report
