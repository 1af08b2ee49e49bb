#include "emit/group_kernels.hpp"

namespace kvlayout::emit {

std::string group_kernel_name(const std::string& base, const GroupPiece& p) {
  return base + "_t" + std::to_string(p.target_rank) + "_from_s" + std::to_string(p.source_rank);
}

std::vector<GroupKernel> emit_group_kernels(const std::vector<GroupPiece>& pieces, const EmitOptions& options) {
  std::vector<GroupKernel> out;
  out.reserve(pieces.size());
  for (const GroupPiece& p : pieces) {
    EmitOptions o = options;
    o.name = group_kernel_name(options.name, p);
    GroupKernel k;
    k.function = o.name;
    k.file = o.name + (options.target == Target::Cuda ? ".cu" : ".cpp");
    k.text = emit_kernel(p.proof, o);
    out.push_back(std::move(k));
  }
  return out;
}

spec::Json group_manifest(const prove::GroupProof& g, const std::vector<GroupPiece>& pieces,
                          const std::vector<GroupKernel>& kernels, const EmitOptions& options) {
  spec::Json list = spec::Json::array();
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    spec::Json k = piece_json(g, pieces[i]);
    k["function"] = kernels.at(i).function;
    k["file"] = kernels.at(i).file;
    list.push_back(std::move(k));
  }
  return {{"source_group", group_summary_json(g.source)},
          {"target_group", group_summary_json(g.target)},
          {"cache", g.proof.cache.name},
          {"grade", prove::grade_name(g.proof.grade)},
          {"target", options.target == Target::Cuda ? "cuda" : "cpu"},
          {"abi", "extern \"C\" int FN(void* const* src, void* const* dst, const int32_t* const* src_tables, "
                  "const int32_t* const* dst_tables, int64_t num_tokens, int num_threads)"},
          {"note", "src: the source rank's tensor instances, dst: the target rank's; run every kernel of a target "
                   "rank to fill it (their positions are disjoint)"},
          {"kernels", list}};
}

}  // namespace kvlayout::emit
