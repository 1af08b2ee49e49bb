#include "emit/cuda.hpp"

#include <algorithm>
#include <numeric>

#include "emit/code_writer.hpp"
#include "emit/conversion.hpp"
#include "emit/cpu.hpp"
#include "emit/header.hpp"
#include "emit/statements.hpp"
#include "expr/c_print.hpp"

namespace kvlayout::emit {
namespace {

const Inputs kInputs{"S", "T", "st", "dt", "n"};

// The widest chunk (16, 8, 4, 2 or 1 bytes) that divides the run and every byte step of both sides, so
// that aligned base pointers keep every chunk aligned.
int widest_chunk(const Cell& cell, int sb, int tb) {
  std::int64_t g = cell.run_elements * sb;
  auto fold = [&](const SideForm& f, int bytes) {
    g = std::gcd(g, f.constant * bytes);
    for (std::size_t m = 0; m < f.stride.size(); ++m)  // steps between runs (a run's own elements are contiguous)
      if (std::find(cell.run.begin(), cell.run.end(), static_cast<int>(m)) == cell.run.end())
        g = std::gcd(g, f.stride[m] * bytes);
    for (const Atom& a : f.atoms) g = std::gcd(g, a.coef * bytes);
  };
  fold(cell.source, sb);
  fold(cell.target, tb);
  for (int c : {16, 8, 4, 2}) if (g % c == 0) return c;
  return 1;
}

void print_cell(CodeWriter& w, const Cell& cell, std::size_t index, int sb, int tb, bool convert) {
  w.line("template <int CHUNK>");
  w.open("__global__ void cell" + std::to_string(index) + "(Pointers p, int64_t n, int64_t total)");
  w.line("const void* const* S = p.src; void* const* T = p.dst; const int32_t* const* st = p.st; const int32_t* const* dt = p.dt;");
  w.line("(void)S; (void)T; (void)st; (void)dt;");
  const std::int64_t per_run = convert ? cell.run_elements : cell.run_elements * sb;  // units per run
  w.line("const int64_t units = " + (convert ? i64(per_run) : i64(per_run) + " / CHUNK") + ";");
  w.open("for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total * units; i += static_cast<int64_t>(gridDim.x) * blockDim.x)");
  w.line("int64_t outer = i / units;");
  w.line("const int64_t unit = i % units;");
  for (std::size_t l = cell.loops.size(); l-- > 0;) {
    const std::string& v = cell.modes[static_cast<std::size_t>(cell.loops[l])].var;
    w.line("const int64_t E" + std::to_string(l) + " = " + extent(cell, cell.loops[l], kInputs) + ";");
    w.line("const int64_t " + v + " = outer % E" + std::to_string(l) + "; outer /= E" + std::to_string(l) + ";");
  }
  w.line("(void)outer;");
  for (int l = -1; l < static_cast<int>(cell.loops.size()); ++l)
    for (const auto& line : level_statements(cell, l, kInputs, "continue;")) w.line(line);
  const std::string s = pointer_name(true) + " + " + final_offset(cell, true) + " * " + std::to_string(sb);
  const std::string d = pointer_name(false) + " + " + final_offset(cell, false) + " * " + std::to_string(tb);
  if (convert) {
    w.line("uint32_t bits = 0;");
    w.line("memcpy(&bits, " + s + " + unit * " + std::to_string(sb) + ", " + std::to_string(sb) + ");");
    w.line("const uint32_t out = kv_convert(bits);");
    w.line("memcpy(" + d + " + unit * " + std::to_string(tb) + ", &out, " + std::to_string(tb) + ");");
  } else {
    w.line("kv_copy<CHUNK>(" + d + " + unit * CHUNK, " + s + " + unit * CHUNK);");
  }
  w.close();
  w.close();
}

// The host-side launch of one cell: its outer iteration count, the chunk its pointers allow.
void print_launch(CodeWriter& w, const Cell& cell, std::size_t index, int chunk, int sb, bool convert) {
  const Inputs host{"src", "dst", "src_tables", "dst_tables", "num_tokens"};
  w.open("");
  std::string total = "INT64_C(1)";
  for (std::size_t l = 0; l < cell.loops.size(); ++l) total += " * " + extent(cell, cell.loops[l], host);
  w.line("const int64_t total = " + total + ";");
  std::string name = "cell" + std::to_string(index);
  if (convert) {
    w.line("if (total > 0) launch(" + name + "<1>, p, num_tokens, total, total * " + i64(cell.run_elements) + ");");
  } else {
    std::int64_t bytes = cell.run_elements * sb;
    w.line("if (total > 0) {");
    for (int c : {16, 8, 4, 2}) {
      if (c > chunk) continue;
      w.line("  if (aligned(p, " + std::to_string(c) + ")) { launch(" + name + "<" + std::to_string(c) + ">, p, num_tokens, total, total * " +
             i64(bytes / c) + "); } else");
    }
    w.line("  { launch(" + name + "<1>, p, num_tokens, total, total * " + i64(bytes) + "); }");
    w.line("}");
  }
  w.close();
}

}  // namespace

std::string cuda_kernel(const prove::Proof& p, const Plan& plan, const EmitOptions& o) {
  const auto& S = *p.source_bound;
  const auto& T = *p.target_bound;
  if (!plan.inverses.empty()) throw EmitError("the CUDA printer reads plans without inverted tables (PlanOptions::invert_tables)");
  const int sb = spec::dtype_bytes(S.layout->dtype), tb = spec::dtype_bytes(T.layout->dtype);
  const bool convert = S.layout->dtype != T.layout->dtype;
  CodeWriter w;
  w.raw(header_comment(p, plan, o)).line();
  w.raw("#include <cuda_runtime.h>\n#include <math.h>\n#include <stdint.h>\n#include <string.h>\n\n");
  w.raw("namespace kvlayout_generated_" + o.name + " {\n\n" + expr::c_helpers("__host__ __device__"));
  if (convert) w.raw(conversion_source(S.layout->dtype, T.layout->dtype, "__host__ __device__"));
  const std::int64_t ns = instance_count(S), nt = instance_count(T);
  const std::size_t nst = std::max<std::size_t>(1, S.tables.size()), ndt = std::max<std::size_t>(1, T.tables.size());
  w.line().line("// Passed by value: the instance and table pointers of both sides (device addresses).");
  w.open("struct Pointers");
  w.line("const void* src[" + std::to_string(ns) + "];");
  w.line("void* dst[" + std::to_string(nt) + "];");
  w.line("const int32_t* st[" + std::to_string(nst) + "];");
  w.line("const int32_t* dt[" + std::to_string(ndt) + "];");
  w.close(";");
  w.line("__device__ int kv_error;").line();
  w.raw(R"(template <int CHUNK>
__device__ static inline void kv_copy(char* to, const char* from) {
  if (CHUNK == 16) *reinterpret_cast<uint4*>(to) = *reinterpret_cast<const uint4*>(from);
  else if (CHUNK == 8) *reinterpret_cast<uint2*>(to) = *reinterpret_cast<const uint2*>(from);
  else if (CHUNK == 4) *reinterpret_cast<uint32_t*>(to) = *reinterpret_cast<const uint32_t*>(from);
  else if (CHUNK == 2) *reinterpret_cast<uint16_t*>(to) = *reinterpret_cast<const uint16_t*>(from);
  else *to = *from;
}

static bool aligned(const Pointers& p, int bytes) {
  for (const void* q : p.src) if (reinterpret_cast<uintptr_t>(q) % bytes != 0) return false;
  for (void* q : p.dst) if (reinterpret_cast<uintptr_t>(q) % bytes != 0) return false;
  return true;
}

template <class Kernel>
static void launch(Kernel kernel, const Pointers& p, int64_t n, int64_t total, int64_t threads) {
  const int64_t blocks = (threads + 255) / 256;
  kernel<<<static_cast<unsigned>(blocks < 65535 * 16 ? blocks : 65535 * 16), 256>>>(p, n, total);
}

)");
  auto checks = table_checks(p, plan, "atomicExch(&kv_error, 2);");
  if (!checks.empty()) {
    w.open("__global__ void check_tables(Pointers p, int64_t num_tokens)");
    w.line("const int32_t* const* src_tables = p.st; const int32_t* const* dst_tables = p.dt;");
    w.line("(void)src_tables; (void)dst_tables;");
    w.open("for (int64_t token = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; token < num_tokens; token += static_cast<int64_t>(gridDim.x) * blockDim.x)");
    for (const auto& line : checks) w.line(line);
    w.close();
    w.close();
    w.line();
  }
  // Distinct blocks: each entry read claims its block in a device array (-1 = unclaimed); a block claimed
  // by another entry is a repeated block.
  const std::vector<DistinctCheck> distinct = distinct_checks(p, plan);
  for (std::size_t i = 0; i < distinct.size(); ++i) {
    const DistinctCheck& c = distinct[i];
    w.open("__global__ void check_distinct" + std::to_string(i) + "(Pointers p, int64_t num_tokens, int* owner)");
    w.line("const int32_t* const* src_tables = p.st; const int32_t* const* dst_tables = p.dt;");
    w.line("(void)src_tables; (void)dst_tables;");
    w.open("for (int64_t token = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; token < num_tokens; token += static_cast<int64_t>(gridDim.x) * blockDim.x)");
    for (const auto& e : c.entries)
      w.line("{ const int64_t e = " + e + "; const int old = atomicCAS(&owner[" + c.table + "[e] - " + i64(c.first) +
             "], -1, static_cast<int>(e)); if (old != -1 && old != static_cast<int>(e)) atomicExch(&kv_error, " +
             std::to_string(kRepeatedBlock) + "); }");
    w.close();
    w.close();
    w.line();
  }
  // On the GPU a transposing cell needs no tiles: one element per thread, the target-contiguous mode
  // innermost, so that consecutive threads write consecutive elements.
  std::vector<Cell> cells = plan.cells;
  for (Cell& c : cells) {
    if (c.tile_target_contiguous < 0) continue;
    for (auto it = c.tile_source_merged.rbegin(); it != c.tile_source_merged.rend(); ++it) c.loops.push_back(*it);
    c.loops.push_back(c.tile_source_contiguous);
    for (auto it = c.tile_target_merged.rbegin(); it != c.tile_target_merged.rend(); ++it) c.loops.push_back(*it);
    c.loops.push_back(c.tile_target_contiguous);
    c.tile_target_contiguous = c.tile_source_contiguous = c.tile_guard = -1;
    c.tile_target_merged.clear();
    c.tile_source_merged.clear();
    c.tile_target_rows_gathered = c.tile_source_rows_gathered = false;
  }
  for (std::size_t i = 0; i < cells.size(); ++i) {
    print_cell(w, cells[i], i, sb, tb, convert);
    w.line();
  }
  w.line("}  // namespace kvlayout_generated_" + o.name).line();
  w.open("extern \"C\" int " + o.name +
         "(void* const* src, void* const* dst, const int32_t* const* src_tables, const int32_t* const* dst_tables, "
         "int64_t num_tokens, int num_threads)");
  w.line("using namespace kvlayout_generated_" + o.name + ";");
  w.line("(void)num_threads;");
  for (const auto& line : pointer_checks(p, plan)) w.line(line);
  w.line("Pointers p{};");
  w.line("for (int i = 0; i < " + std::to_string(ns) + "; ++i) p.src[i] = src[i];");
  w.line("for (int i = 0; i < " + std::to_string(nt) + "; ++i) p.dst[i] = dst[i];");
  if (!S.tables.empty()) w.line("for (int i = 0; i < " + std::to_string(S.tables.size()) + "; ++i) p.st[i] = src_tables[i];");
  if (!T.tables.empty()) w.line("for (int i = 0; i < " + std::to_string(T.tables.size()) + "; ++i) p.dt[i] = dst_tables[i];");
  if (!checks.empty()) {
    w.line("int error = 0;");
    w.line("if (cudaMemcpyToSymbol(kv_error, &error, sizeof error) != cudaSuccess) return 4;");
    w.line("if (num_tokens > 0) check_tables<<<static_cast<unsigned>((num_tokens + 255) / 256), 256>>>(p, num_tokens);");
    w.line("if (cudaMemcpyFromSymbol(&error, kv_error, sizeof error) != cudaSuccess) return 4;");
    w.line("if (error != 0) return error;");
    for (std::size_t i = 0; i < distinct.size(); ++i) {
      const std::string bytes = i64((distinct[i].end - distinct[i].first) * 4);
      w.open("if (num_tokens > 0)");
      w.line("int* owner = nullptr;");
      w.line("if (cudaMalloc(&owner, " + bytes + ") != cudaSuccess) return 4;");
      w.line("const bool ok = cudaMemset(owner, 0xff, " + bytes + ") == cudaSuccess;");
      w.line("if (ok) check_distinct" + std::to_string(i) + "<<<static_cast<unsigned>((num_tokens + 255) / 256), 256>>>(p, num_tokens, owner);");
      w.line("if (cudaFree(owner) != cudaSuccess || !ok) return 4;");
      w.close();
    }
    if (!distinct.empty()) {
      w.line("if (cudaMemcpyFromSymbol(&error, kv_error, sizeof error) != cudaSuccess) return 4;");
      w.line("if (error != 0) return error;");
    }
  }
  for (std::size_t i = 0; i < cells.size(); ++i) print_launch(w, cells[i], i, widest_chunk(cells[i], sb, tb), sb, convert);
  w.line("if (cudaDeviceSynchronize() != cudaSuccess || cudaGetLastError() != cudaSuccess) return 4;");
  w.line("return 0;");
  w.close();
  return w.str();
}

}  // namespace kvlayout::emit
