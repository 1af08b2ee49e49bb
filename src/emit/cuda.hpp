#pragma once
// The CUDA printer: per cell, a grid-stride kernel in which consecutive threads copy consecutive chunks
// (16 bytes when strides and pointers allow) of the runs, in the destination's order, so reads and writes
// coalesce; the loop indices come from the thread's index, so no thread branches per element. A device
// pass checks the table entries first; the host function keeps the CPU kernel's C ABI.
#include <string>

#include "emit/emit.hpp"
#include "emit/plan.hpp"

namespace kvlayout::emit {

std::string cuda_kernel(const prove::Proof& proof, const Plan& plan, const EmitOptions& options);

}  // namespace kvlayout::emit
