#pragma once
// Group rows: rank families moved between group sizes on real models (hetero-TP 1 <-> 2 <-> 4, a whole
// cache scattered to TP ranks and gathered back, replicated KV heads, engines' TP groups against one
// another, PP stages), listed in one table here. Each row is a group proof (prove/group.hpp) on its
// production shape, and a group cross-check by enumeration (enumerate/group_cross_check.hpp) on a small
// shape where both groups fit, compared with the group proof on that same small shape. A row whose
// layout or cache shape is not in the specs is an error of the table (counted, never skipped).
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "enumerate/cross_check.hpp"
#include "prove/options.hpp"
#include "spec/cache_shape.hpp"
#include "spec/catalog.hpp"
#include "spec/json_node.hpp"
#include "spec/layout.hpp"
#include "verdict/grade.hpp"
#include "verdict/reason.hpp"

namespace kvlayout::certificate {

struct GroupRowSpec {
  std::string source;
  std::map<std::string, std::int64_t> source_params;  // the source side's layout parameters (e.g. tp_size)
  std::string target;
  std::map<std::string, std::int64_t> target_params;
  std::string cache;                                    // the production shape the row is proven on
  // Parameters of the cross-check shape changed for this row (e.g. the model's 2 KV heads, so that tp 4
  // replicates heads there too); empty: the matrix's cross-check shape as it is.
  std::map<std::string, std::int64_t> cross_check_params;
};

// The table. @post no two rows are the same move on the same shape.
const std::vector<GroupRowSpec>& group_row_table();

// "vllm-flash-nhd-tp (tp_size=1) -> vllm-flash-nhd-tp (tp_size=2) on llama-3.1-70b": a row's key.
std::string group_row_key(const GroupRowSpec& spec);

struct GroupRow {
  GroupRowSpec spec;
  verdict::Grade grade = verdict::Grade::Unknown;
  verdict::Reason reason = verdict::Reason::SolverLimit;
  std::string unblocked_by;
  double prove_ms = 0;
  spec::Json assignment = spec::Json::array();  // as `kvlayout prove --json`'s "assignment"
  spec::Json counterexample;                    // the deciding obligation's, or null when exact
  std::string cross_check_cache;                // the small shape (or one derived from it), by name
  verdict::Grade small_grade = verdict::Grade::Unknown;  // the group proof on cross_check_cache
  verdict::Reason small_reason = verdict::Reason::SolverLimit;
  enumerate::CrossCheck cross;  // cross.checked false: not cross-checked, cross.not_checked says why
  std::string error;            // a layout or shape the table names missing, or kvlayout's own failure

  bool cross_checked() const { return error.empty() && cross.checked; }
  bool not_cross_checked() const { return error.empty() && !cross.checked; }
  bool agree() const {
    return error.empty() && (!cross.checked || (cross.grade == small_grade && cross.reason == small_reason));
  }
};

struct GroupRows {
  std::vector<GroupRow> rows;                        // in table order
  std::map<std::string, spec::CacheShape> caches;    // every shape used, by name
};

// The table's rows decided against `layouts` (the loaded catalog), `small` being the matrix's cross-check
// shape. Throws SpecError for bad input met while deciding (as the matrix does); a failure of kvlayout
// itself, or a name the table lists that the specs lack, is that row's `error`.
GroupRows run_group_rows(const spec::Catalog& catalog, const std::vector<std::shared_ptr<const spec::Layout>>& layouts,
                         const std::vector<GroupRowSpec>& table, const spec::CacheShape& small,
                         const prove::ProveOptions& options, int jobs);

struct GroupRowCounts {
  std::size_t rows = 0, disagree = 0, unknown = 0, errors = 0, not_cross_checked = 0;
  std::int64_t positions_checked = 0;
  std::map<std::string, std::size_t> grades, reasons, cross_checked_on;
};
GroupRowCounts count_group_rows(const std::vector<GroupRow>& rows);

spec::Json group_row_json(const GroupRow& row);
spec::Json group_row_counts_json(const GroupRowCounts& counts);

// The rows as text, one line each: grade, reason, the move, its cross-check.
std::string format_group_rows(const std::vector<GroupRow>& rows);

}  // namespace kvlayout::certificate
