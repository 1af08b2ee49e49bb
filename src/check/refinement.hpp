#pragma once
// `kvlayout check REAL ASSUMED`: is the layout a kernel or connector ASSUMES a refinement of the engine's
// REAL one? Wherever ASSUMED holds a position, REAL must hold it in the tensor of the same name, at the
// same instance and element, under every block table (tables paired by name). ASSUMED may cover part of
// REAL (one rank's heads, one layer range); with a scope, every in-scope position REAL holds must be held
// by ASSUMED as well. Decided symbolically over the whole cache shape (nothing enumerates), in steps:
//   content      same content and coordinate extents            (else bad input, SpecError)
//   tables       every table ASSUMED reads exists in REAL, alike (else bad input, SpecError)
//   value        same element type and scale                    (else VALUE_CHANGE)
//   defined      every expression evaluates without error        (else bad input, the evaluator's SpecError)
//   in-bounds    ASSUMED's address of a held position lies in REAL's tensor instance (else OUT_OF_BOUNDS)
//   refines      REAL stores every position ASSUMED holds at ASSUMED's address (else WRONG_MAPPING)
//   covers-scope every in-scope position REAL holds, ASSUMED holds (only with a scope; else UNCOVERED)
// Every counterexample is re-checked with layout::locate; one that does not reproduce is an internal error.
#include <optional>
#include <string>

#include "check/result.hpp"
#include "layout/bound_layout.hpp"
#include "prove/options.hpp"

namespace kvlayout::check {

struct RefinementOptions {
  std::optional<std::string> scope;  // a truth value over the content's coordinates (REAL's names), or none
  prove::ProveOptions prove;
};

// @pre real.fits() and assumed.fits(), bound on the same cache shape. Throws SpecError for bad input
// (different content, a table or tensor ASSUMED names that REAL lacks, an expression undefined somewhere,
// a malformed scope).
CheckResult check_refinement(const layout::BoundLayout& real, const layout::BoundLayout& assumed,
                             const RefinementOptions& options = {});

}  // namespace kvlayout::check
