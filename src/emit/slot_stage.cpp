#include "emit/slot_stage.hpp"

#include <algorithm>
#include <string>

#include "emit/statements.hpp"

namespace kvlayout::emit {

namespace {

std::string i64(std::int64_t v) { return "INT64_C(" + std::to_string(v) + ")"; }

const Mode& mode_of(const Cell& cell, int m) { return cell.modes[static_cast<std::size_t>(m)]; }
std::int64_t stride_of(const SideForm& f, int m) { return f.stride[static_cast<std::size_t>(m)]; }

// The target's one lookup, when it is a table read at the token itself with coefficient 1 over the two
// token digits, whose entries lie in [0, capacity): every read of that table in the plan takes the bare
// token as its entry, so the lookup is cells[token] whatever digits the atom spells it with.
bool target_places_token_in_cells(const Cell& cell, const Plan& plan, const layout::BoundLayout& target, int block, int lane) {
  if (cell.target.atoms.size() != 1) return false;
  const Atom& atom = cell.target.atoms.front();
  if (atom.coef != 1 || atom.e == nullptr || atom.e->op != expr::Op::Lookup) return false;
  for (int m : atom.modes)
    if (m != block && m != lane) return false;
  const std::int64_t table = atom.e->value;
  if (table < 0 || static_cast<std::size_t>(table) >= target.tables.size()) return false;
  const layout::BoundTable& t = target.tables[static_cast<std::size_t>(table)];
  if (t.first != 0 || t.end != plan.capacity) return false;
  bool read = false;
  for (const TableRead& r : plan.reads) {
    if (r.on_source || r.table != table) continue;
    if (r.entry == nullptr || r.entry->op != expr::Op::Coord || r.entry->value != plan.token_coord) return false;
    read = true;
  }
  return read;
}

}  // namespace

std::optional<SlotStage> slot_stage(const Cell& cell, const Plan& plan, const layout::BoundLayout& target, int source_bytes, int target_bytes,
                                    bool convert, std::size_t flat, std::size_t members) {
  if (members != 1 || convert || source_bytes != 2 || target_bytes != 2) return std::nullopt;
  if (cell.run_elements != 1 || cell.tile_target_contiguous >= 0 || cell.tile_target_rows_gathered || cell.tile_source_rows_gathered)
    return std::nullopt;
  if (cell.loops.size() != flat + 3 || plan.token_coord < 0 || plan.capacity <= 0 || plan.capacity % 32 != 0) return std::nullopt;
  SlotStage s;
  s.level = flat;
  s.dim = cell.loops[flat], s.block = cell.loops[flat + 1], s.lane = cell.loops[flat + 2];
  const Mode &dim = mode_of(cell, s.dim), &block = mode_of(cell, s.block), &lane = mode_of(cell, s.lane);
  // The token: exactly the two digits block, lane (lane the lowest), spanning every token from 0.
  if (block.coord != plan.token_coord || lane.coord != plan.token_coord) return std::nullopt;
  const CellCoordinate& token = cell.coords[static_cast<std::size_t>(plan.token_coord)];
  if (token.inverse >= 0 || token.modes != std::vector<int>{s.block, s.lane} || token.lo != 0 || token.hi + 1 != plan.capacity) return std::nullopt;
  if (lane.weight != 1 || block.weight != lane.extent || block.extent * lane.extent != plan.capacity || lane.extent % 16 != 0) return std::nullopt;
  // Lanes contiguous in the source and placed in the target by the lookup alone; the block by the source's
  // own lookups and strides.
  if (stride_of(cell.source, s.lane) != 1 || read_by_atoms(cell.source, s.lane) || stride_of(cell.target, s.lane) != 0 ||
      stride_of(cell.target, s.block) != 0 || read_by_atoms(cell.source, s.dim) || read_by_atoms(cell.target, s.dim))
    return std::nullopt;
  for (int m : {s.dim, s.block, s.lane})
    if (selects_instance(cell, m)) return std::nullopt;
  // The dim: a plain counter, its block's dims x lanes one contiguous box of the source.
  if (dim.coord == plan.token_coord || dim.top_of_token || cell.coords[static_cast<std::size_t>(dim.coord)].guarded ||
      stride_of(cell.source, s.dim) != lane.extent || stride_of(cell.target, s.dim) <= 0)
    return std::nullopt;
  s.group = dim.extent % 32 == 0 ? 32 : dim.extent % 16 == 0 ? 16 : 0;
  if (s.group == 0) return std::nullopt;
  if (!target_places_token_in_cells(cell, plan, target, s.block, s.lane)) return std::nullopt;
  s.cells = plan.capacity;
  if (s.cells * s.group * 2 > kMostSlotStageBytes) return std::nullopt;
  return s;
}

void print_slot_stage_buffers(CodeWriter& w) {
  w.line("std::unique_ptr<char[]> kv_slot_buffer;  // the slot rows (print_slot_stage), allocated at the first staged iteration");
  w.line("std::vector<const char*> kv_block_at;  // each block's source box");
  w.line("std::vector<int64_t> kv_slot_at;  // each token's cell");
}

void print_slot_stage(CodeWriter& w, const Cell& cell, const SlotStage& stage, const std::function<void(int)>& statements) {
  const Mode &dim = mode_of(cell, stage.dim), &block = mode_of(cell, stage.block), &lane = mode_of(cell, stage.lane);
  const int level = static_cast<int>(stage.level);
  const std::int64_t lanes = lane.extent, blocks = block.extent, group = stage.group, row = group * 2, box = lanes * 2;
  const std::int64_t stage_bytes = stage.cells * row;
  w.line("// Every token moved: each cell written once (the cells are checked distinct at entry), through slot rows of " + std::to_string(group) +
         " dims (slot_stage.hpp).");
  w.line("#if defined(__SSE2__)");
  w.open("if (n >= " + i64(stage.cells) + ")");
  w.line("if (!kv_slot_buffer) kv_slot_buffer.reset(new char[" + std::to_string(stage_bytes + 64) + "]);");
  w.line("char* const kv_slots = kv_slot_buffer.get() + (64 - reinterpret_cast<uintptr_t>(kv_slot_buffer.get()) % 64) % 64;");
  w.line("kv_block_at.resize(" + std::to_string(blocks) + ");");
  w.line("kv_slot_at.resize(" + std::to_string(stage.cells) + ");");
  // Where each block's box starts (the dim at 0) and which cell each token takes.
  w.line("const int64_t " + dim.var + " = 0;");
  statements(level);
  w.open("for (int64_t " + block.var + " = 0; " + block.var + " < " + i64(blocks) + "; ++" + block.var + ")");
  statements(level + 1);
  w.line("kv_block_at[static_cast<size_t>(" + block.var + ")] = " + pointer_name(true) + " + " + offset_at(cell, true, level + 1) + " * 2;");
  w.open("for (int64_t " + lane.var + " = 0; " + lane.var + " < " + i64(lanes) + "; ++" + lane.var + ")");
  statements(level + 2);
  w.line("(void)" + offset_at(cell, true, level + 2) + ";");
  w.line("kv_slot_at[static_cast<size_t>(" + block.var + " * " + i64(lanes) + " + " + lane.var + ")] = " + offset_at(cell, false, level + 2) + " - " +
         offset_at(cell, false, level + 1) + ";");
  w.close();
  w.close();
  w.open("for (int64_t kv_group = 0; kv_group < " + i64(dim.extent) + "; kv_group += " + i64(group) + ")");
  // Each block's group of dims (one contiguous box of group x lanes) into its tokens' slot rows, the next
  // block's box prefetched beside it.
  w.open("for (int64_t kv_block = 0; kv_block < " + i64(blocks) + "; ++kv_block)");
  w.line("const char* const kv_box = kv_block_at[static_cast<size_t>(kv_block)] + kv_group * " + i64(box) + ";");
  w.line("if (kv_block + 1 < " + i64(blocks) + ") for (int64_t line = 0; line < " + i64(group * box) +
         "; line += 64) kv_prefetch<64>(kv_block_at[static_cast<size_t>(kv_block + 1)] + kv_group * " + i64(box) + " + line);");
  w.line("char* kv_to[" + std::to_string(lanes) + "];");
  w.line("for (int64_t k = 0; k < " + i64(lanes) + "; ++k) kv_to[k] = kv_slots + kv_slot_at[static_cast<size_t>(kv_block * " + i64(lanes) + " + k)] * " +
         i64(row) + ";");
  w.line("const char* kv_from[" + std::to_string(group) + "];");
  w.line("for (int64_t k = 0; k < " + i64(group) + "; ++k) kv_from[k] = kv_box + k * " + i64(box) + ";");
  w.line("kv_transpose_row_groups<" + std::to_string(group / 8) + ">(kv_to, 0, kv_from, 0, " + i64(lanes) + ", false);");
  w.close();
  // The slot rows, [cell][dim], into the group's target rows, 32 cells at a time.
  w.line("char* kv_rows[" + std::to_string(group) + "];");
  w.line("for (int64_t k = 0; k < " + i64(group) + "; ++k) kv_rows[k] = " + pointer_name(false) + " + (" + offset_at(cell, false, level) +
         " + (kv_group + k) * " + i64(cell.target.stride[static_cast<std::size_t>(stage.dim)]) + ") * 2;");
  w.open("for (int64_t kv_cell = 0; kv_cell < " + i64(stage.cells) + "; kv_cell += 32)");
  w.line("const char* kv_cells[32];");
  w.line("for (int64_t k = 0; k < 32; ++k) kv_cells[k] = kv_slots + (kv_cell + k) * " + i64(row) + ";");
  w.line("kv_transpose_rows_block<2>(kv_rows, kv_cell * 2, kv_cells, 0, 32, " + i64(group) + ", stream, true);");
  w.close();
  w.close();
  w.line("continue;");
  w.close();
  w.line("#endif");
}

}  // namespace kvlayout::emit
