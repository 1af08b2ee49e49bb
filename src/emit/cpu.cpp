#include "emit/cpu.hpp"

#include "emit/code_writer.hpp"
#include "emit/conversion.hpp"
#include "emit/header.hpp"
#include "emit/statements.hpp"
#include "expr/c_print.hpp"

namespace kvlayout::emit {
namespace {

std::string i64(std::int64_t v) { return "INT64_C(" + std::to_string(v) + ")"; }

const Inputs kInputs{"S", "T", "st", "dt", "n"};

// The copy of one run: one fixed-size memcpy (the compiler turns it into vector moves), or, for a
// converting move, one conversion per element.
void print_copy(CodeWriter& w, const Cell& cell, int source_bytes, int target_bytes, bool convert) {
  const std::string s = pointer_name(true) + " + " + final_offset(cell, true) + " * " + std::to_string(source_bytes);
  const std::string d = pointer_name(false) + " + " + final_offset(cell, false) + " * " + std::to_string(target_bytes);
  if (!convert) {
    w.line("std::memcpy(" + d + ", " + s + ", " + std::to_string(cell.run_elements * source_bytes) + ");");
    return;
  }
  w.line("const char* const from = " + s + ";");
  w.line("char* const to = " + d + ";");
  w.open("for (int64_t e = 0; e < " + i64(cell.run_elements) + "; ++e)");
  w.line("uint32_t bits = 0;");
  w.line("std::memcpy(&bits, from + e * " + std::to_string(source_bytes) + ", " + std::to_string(source_bytes) + ");");
  w.line("const uint32_t out = kv_convert(bits);");
  w.line("std::memcpy(to + e * " + std::to_string(target_bytes) + ", &out, " + std::to_string(target_bytes) + ");");
  w.close();
}

void print_cell(CodeWriter& w, const Cell& cell, std::size_t index, int source_bytes, int target_bytes, bool convert) {
  w.open("static void cell" + std::to_string(index) +
         "(const void* const* S, void* const* T, const int32_t* const* st, const int32_t* const* dt, int64_t n, "
         "int64_t part, int64_t parts)");
  w.line("(void)st; (void)dt; (void)n;");
  for (const auto& line : level_statements(cell, -1, kInputs, "return;")) w.line(line);
  const std::size_t loops = cell.loops.size();
  if (loops == 0) {
    w.line("if (part != 0) return;");
    print_copy(w, cell, source_bytes, target_bytes, convert);
    w.close();
    return;
  }
  // The two outermost loops are flattened and split evenly across the threads.
  const std::size_t flat = loops >= 2 ? 2 : 1;
  for (std::size_t l = 0; l < flat; ++l)
    w.line("const int64_t E" + std::to_string(l) + " = " + extent(cell, cell.loops[l], kInputs) + ";");
  w.line("const int64_t total = " + std::string(flat == 2 ? "E0 * E1" : "E0") + ";");
  w.line("const int64_t begin = total * part / parts, end = total * (part + 1) / parts;");
  w.open("for (int64_t flat = begin; flat < end; ++flat)");
  const std::string& v0 = cell.modes[static_cast<std::size_t>(cell.loops[0])].var;
  if (flat == 2) {
    const std::string& v1 = cell.modes[static_cast<std::size_t>(cell.loops[1])].var;
    w.line("const int64_t " + v0 + " = flat / E1, " + v1 + " = flat % E1;");
  } else {
    w.line("const int64_t " + v0 + " = flat;");
  }
  for (std::size_t l = 0; l < flat; ++l)
    for (const auto& line : level_statements(cell, static_cast<int>(l), kInputs, "continue;")) w.line(line);
  for (std::size_t l = flat; l < loops; ++l) {
    const std::string& v = cell.modes[static_cast<std::size_t>(cell.loops[l])].var;
    w.open("for (int64_t " + v + " = 0, " + v + "_end = " + extent(cell, cell.loops[l], kInputs) + "; " + v + " < " + v +
           "_end; ++" + v + ")");
    for (const auto& line : level_statements(cell, static_cast<int>(l), kInputs, "continue;")) w.line(line);
  }
  print_copy(w, cell, source_bytes, target_bytes, convert);
  for (std::size_t l = flat; l < loops; ++l) w.close();
  w.close();
  w.close();
}

std::string prologue(const prove::Proof& p, const EmitOptions& o) {
  bool convert = p.source_layout->dtype != p.target_layout->dtype;
  std::string s = "#include <cmath>\n#include <cstdint>\n#include <cstring>\n#include <math.h>\n#include <thread>\n#include <vector>\n\n";
  s += "namespace kvlayout_generated_" + o.name + " {\n\n" + expr::c_helpers("");
  if (convert) s += conversion_source(p.source_layout->dtype, p.target_layout->dtype, "");
  return s + "\n";
}

void print_entry(CodeWriter& w, const prove::Proof& p, const Plan& plan, const EmitOptions& o, const std::string& run_part) {
  w.open("extern \"C\" int " + o.name +
         "(void* const* src, void* const* dst, const int32_t* const* src_tables, const int32_t* const* dst_tables, "
         "int64_t num_tokens, int num_threads)");
  w.line("using namespace kvlayout_generated_" + o.name + ";");
  for (const auto& line : pointer_checks(p, plan)) w.line(line);
  auto reads = table_checks(p, plan, "return 2;");
  if (!reads.empty()) {
    // Every entry the move will read, for every token it moves, before anything is written.
    w.open("for (int64_t token = 0; token < num_tokens; ++token)");
    for (const auto& line : reads) w.line(line);
    w.close();
  }
  w.line("const int parts = num_threads < 1 ? 1 : num_threads;");
  w.line("auto work = [&](int64_t part) { " + run_part + "(src, dst, src_tables, dst_tables, num_tokens, part, parts); };");
  w.line("std::vector<std::thread> workers;");
  w.line("for (int part = 1; part < parts; ++part) workers.emplace_back(work, part);");
  w.line("work(0);");
  w.line("for (auto& t : workers) t.join();");
  w.line("return 0;");
  w.close();
}

}  // namespace

std::vector<std::string> pointer_checks(const prove::Proof& p, const Plan& plan) {
  const auto& S = *p.source_bound;
  const auto& T = *p.target_bound;
  std::vector<std::string> out;
  out.push_back("if (src == nullptr || dst == nullptr) return 3;");
  out.push_back("for (int i = 0; i < " + std::to_string(instance_count(S)) + "; ++i) if (src[i] == nullptr) return 3;");
  out.push_back("for (int i = 0; i < " + std::to_string(instance_count(T)) + "; ++i) if (dst[i] == nullptr) return 3;");
  out.push_back("if (num_tokens < 0 || num_tokens > " + i64(plan.capacity) + ") return 1;");
  for (const auto* side : {&S, &T}) {
    if (side->tables.empty()) continue;
    std::string arr = side == &S ? "src_tables" : "dst_tables";
    out.push_back("if (" + arr + " == nullptr) return 3;");
    out.push_back("for (int i = 0; i < " + std::to_string(side->tables.size()) + "; ++i) if (" + arr + "[i] == nullptr) return 3;");
  }
  return out;
}

std::vector<std::string> table_checks(const prove::Proof& p, const Plan& plan, const std::string& fail) {
  std::vector<std::string> out;
  for (const TableRead& r : plan.reads) {
    const auto& b = r.on_source ? *p.source_bound : *p.target_bound;
    const auto& t = b.tables[static_cast<std::size_t>(r.table)];
    const std::string arr = r.on_source ? "src_tables" : "dst_tables";
    std::string entry = expr::to_c(r.entry, [&](const expr::Node& node, const std::string& inner) -> std::string {
      if (node.op == expr::Op::Coord) return "token";
      return "static_cast<int64_t>(" + arr + "[" + std::to_string(node.value) + "][" + inner + "])";
    });
    out.push_back("{ const int64_t e = " + entry + "; if (e < 0 || e >= " + i64(t.length) + ") { " + fail +
                  " } else { const int64_t v = " + arr + "[" + std::to_string(r.table) + "][e]; if (v < " + i64(t.first) +
                  " || v >= " + i64(t.end) + ") { " + fail + " } } }");
  }
  return out;
}

std::string cpu_kernel(const prove::Proof& p, const Plan& plan, const EmitOptions& o) {
  const int sb = spec::dtype_bytes(p.source_layout->dtype), tb = spec::dtype_bytes(p.target_layout->dtype);
  const bool convert = p.source_layout->dtype != p.target_layout->dtype;
  CodeWriter w;
  w.raw(header_comment(p, plan, o)).line().raw(prologue(p, o));
  for (std::size_t i = 0; i < plan.cells.size(); ++i) {
    print_cell(w, plan.cells[i], i, sb, tb, convert);
    w.line();
  }
  w.open("static void run_part(const void* const* S, void* const* T, const int32_t* const* st, const int32_t* const* dt, "
         "int64_t n, int64_t part, int64_t parts)");
  for (std::size_t i = 0; i < plan.cells.size(); ++i) w.line("cell" + std::to_string(i) + "(S, T, st, dt, n, part, parts);");
  w.line("(void)S; (void)T; (void)st; (void)dt; (void)n; (void)part; (void)parts;");
  w.close();
  w.line().line("}  // namespace kvlayout_generated_" + o.name).line();
  print_entry(w, p, plan, o, "run_part");
  return w.str();
}

std::string cpu_naive_kernel(const prove::Proof& p, const Plan& plan, const EmitOptions& o) {
  const auto& S = *p.source_bound;
  const auto& T = *p.target_bound;
  const int sb = spec::dtype_bytes(S.layout->dtype), tb = spec::dtype_bytes(T.layout->dtype);
  const bool convert = S.layout->dtype != T.layout->dtype;
  CodeWriter w;
  w.raw(header_comment(p, plan, o)).line().raw(prologue(p, o));
  w.line("// Naive reference: every position decoded from a flat index with div/mod, both address functions");
  w.line("// evaluated per element. For measuring the planned kernel against; not for serving.");
  w.open("static void run_part(const void* const* S, void* const* T, const int32_t* const* st, const int32_t* const* dt, "
         "int64_t n, int64_t part, int64_t parts)");
  w.line("(void)st; (void)dt;");
  std::int64_t box = 1;
  for (std::size_t c = 0; c < S.coord_extents.size(); ++c)
    if (static_cast<int>(c) != plan.token_coord) box *= S.coord_extents[c];
  w.line("const int64_t total = " + i64(box) + " * n;");
  w.line("const int64_t begin = total * part / parts, end = total * (part + 1) / parts;");
  w.open("for (int64_t flat = begin; flat < end; ++flat)");
  w.line("int64_t rest = flat;");
  for (std::size_t c = S.coord_extents.size(); c-- > 0;) {
    std::string extent = static_cast<int>(c) == plan.token_coord ? "n" : i64(S.coord_extents[c]);
    w.line("const int64_t c" + std::to_string(c) + " = rest % " + extent + "; rest /= " + extent + ";");
  }
  auto side = [&](const layout::BoundLayout& b, bool source) {
    const std::string ptrs = source ? "S" : "T", tables = source ? "st" : "dt", tag = source ? "S" : "T";
    w.line(std::string(source ? "const char* " : "char* ") + "p" + tag + " = nullptr; int64_t o" + tag + " = 0;");
    std::int64_t first = 0;
    bool any = false;
    for (const auto& t : b.tensors) {
      for (const auto& v : t.views) {
        auto leaf = [&](const expr::Node& node, const std::string& entry) -> std::string {
          if (node.op == expr::Op::Coord) return "c" + std::to_string(node.value);
          return "static_cast<int64_t>(" + tables + "[" + std::to_string(node.value) + "][" + entry + "])";
        };
        std::string offset = i64(v.offset);
        for (std::size_t k = 0; k < v.index.size(); ++k) offset += " + (" + expr::to_c(v.index[k], leaf) + ") * " + i64(v.strides[k]);
        std::string instance = i64(first) + (t.per >= 0 ? " + c" + std::to_string(t.per) : "");
        w.line(std::string(any ? "else " : "") + "if (" + expr::to_c(v.holds, leaf) + ") { p" + tag + " = static_cast<" +
               (source ? "const char*" : "char*") + ">(" + ptrs + "[" + instance + "]); o" + tag + " = " + offset + "; }");
        any = true;
      }
      first += t.instances;
    }
  };
  side(S, true);
  side(T, false);
  w.line("if (pS == nullptr || pT == nullptr) continue;");
  if (!convert) {
    w.line("std::memcpy(pT + oT * " + std::to_string(tb) + ", pS + oS * " + std::to_string(sb) + ", " + std::to_string(sb) + ");");
  } else {
    w.line("uint32_t bits = 0;");
    w.line("std::memcpy(&bits, pS + oS * " + std::to_string(sb) + ", " + std::to_string(sb) + ");");
    w.line("const uint32_t out = kv_convert(bits);");
    w.line("std::memcpy(pT + oT * " + std::to_string(tb) + ", &out, " + std::to_string(tb) + ");");
  }
  w.close();
  w.close();
  w.line().line("}  // namespace kvlayout_generated_" + o.name).line();
  print_entry(w, p, plan, o, "run_part");
  return w.str();
}

}  // namespace kvlayout::emit
