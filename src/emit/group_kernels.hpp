#pragma once
// Relayout kernels of a group translation: one kernel per rank pair that exchanges data (group_pieces.hpp),
// each the pair kernel of (source instance -> target instance restricted to its assigned box), so it
// writes exactly the positions that source rank feeds into that target rank's buffers, with the C ABI of
// emit.hpp (src[] the source instance's tensors, dst[] the target instance's). A target rank is complete
// once every kernel naming it has run (in any order: their positions are disjoint).
#include <string>
#include <vector>

#include "emit/emit.hpp"
#include "emit/group_pieces.hpp"

namespace kvlayout::emit {

struct GroupKernel {
  std::string function;  // options.name + "_t<target rank>_from_s<source rank>"
  std::string file;      // function + ".cpp" (CPU) or ".cu" (CUDA)
  std::string text;      // the translation unit
};

// "kvlayout_relayout_t1_from_s0".
std::string group_kernel_name(const std::string& base, const GroupPiece& p);

// @pre every piece's proof licenses its move (as emit_kernel requires; emit_kernel throws otherwise).
// One kernel per piece, in order. Throws as emit_kernel does.
std::vector<GroupKernel> emit_group_kernels(const std::vector<GroupPiece>& pieces, const EmitOptions& options);

// The group manifest (group.json): the groups, cache, grade, target and ABI, and per kernel its piece
// (piece_json) with "function" and "file".
spec::Json group_manifest(const prove::GroupProof& g, const std::vector<GroupPiece>& pieces,
                          const std::vector<GroupKernel>& kernels, const EmitOptions& options);

}  // namespace kvlayout::emit
