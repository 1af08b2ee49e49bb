#pragma once
// The answer of one check (refinement, geometry or plan): a verdict, a one-line message, and — for every
// verdict but OK — a counterexample re-checked by the concrete evaluator before it is shown. Printed as
// text or as the JSON the issue fixes: `check --json` {"verdict", "message", "counterexample",
// "obligations"}; `plan check --json` {"verdict", "message", "counterexample", "checked": {"descriptors",
// "bytes"}, "ms"}.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "check/verdict.hpp"
#include "layout/address.hpp"
#include "layout/block_tables.hpp"
#include "layout/bound_layout.hpp"

namespace kvlayout::check {

// One question a check asked, in the order asked ("value", "tables", "in-bounds", "refines", "covers-scope",
// "geometry", ...): proved, refuted, unknown or skipped, with its time.
struct CheckStep {
  std::string name;
  std::string status;  // "proved" | "refuted" | "unknown" | "skipped"
  std::string detail;
  double ms = 0;
};

struct CheckResult {
  Verdict verdict = Verdict::Ok;
  std::string message;                 // one line; names the first failing fact when not OK
  nlohmann::json counterexample;       // null when OK; an object otherwise (see position_json)
  std::vector<std::string> details;    // the counterexample in text, one line each (indented by the printer)
  std::vector<CheckStep> steps;        // check: the obligations asked; empty for a plan
  std::optional<std::int64_t> checked_descriptors;  // plan check: descriptors (or runs, or family members)
  std::optional<std::int64_t> checked_bytes;        // plan check: destination bytes written
  double ms = 0;
};

// A logical position with its address in one layout, as the counterexamples print it:
// {"position": {"layer": 0, "kv": 1, ...}, "text": "(layer 0, V, ...)", "tensor": "kv_cache", "view": "...",
//  "instance": 0, "element": 16384, "byte": 32768, "tables": {"block_table": {"3": 7}}}.
// @pre loc was computed by layout::locate(bound, coord, tables) (Held or OutOfBounds).
nlohmann::json position_json(const layout::BoundLayout& bound, std::span<const std::int64_t> coord,
                             const layout::Location& loc);
// "(layer 0, K, token 16, head 0, dim 0) at kv_cache[0] element 16384 (byte 32768)".
std::string position_text(const layout::BoundLayout& bound, std::span<const std::int64_t> coord,
                          const layout::Location& loc);

// `check --json` / `plan check --json`: {"verdict", "message", "counterexample", ...} (obligations when
// steps were asked; checked and ms when set).
nlohmann::json to_json(const CheckResult& r);
// "VERDICT: message" then the details, indented; then the steps, one line each.
std::string format_text(const CheckResult& r, const std::string& title);

}  // namespace kvlayout::check
