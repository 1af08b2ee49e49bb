#include "emit/slot_stage.hpp"

#include <algorithm>
#include <string>

#include "emit/code_writer.hpp"
#include "emit/statements.hpp"

namespace kvlayout::emit {

namespace {

const Mode& mode_of(const Cell& cell, int m) { return cell.modes[static_cast<std::size_t>(m)]; }
std::int64_t stride_of(const SideForm& f, int m) { return f.stride[static_cast<std::size_t>(m)]; }

// The cells side's one lookup, when it is a table read at the token itself with coefficient 1 over the two
// token digits, whose entries lie in [0, capacity): every read of that table in the plan takes the bare
// token as its entry, so the lookup is cells[token] whatever digits the atom spells it with.
bool places_token_in_cells(const SideForm& f, bool on_source, const Plan& plan, const layout::BoundLayout& side, int block, int lane) {
  if (f.atoms.size() != 1) return false;
  const Atom& atom = f.atoms.front();
  if (atom.coef != 1 || atom.e == nullptr || atom.e->op != expr::Op::Lookup) return false;
  for (int m : atom.modes)
    if (m != block && m != lane) return false;
  const std::int64_t table = atom.e->value;
  if (table < 0 || static_cast<std::size_t>(table) >= side.tables.size()) return false;
  const layout::BoundTable& t = side.tables[static_cast<std::size_t>(table)];
  if (t.first != 0 || t.end != plan.capacity) return false;
  bool read = false;
  for (const TableRead& r : plan.reads) {
    if (r.on_source != on_source || r.table != table) continue;
    if (r.entry == nullptr || r.entry->op != expr::Op::Coord || r.entry->value != plan.token_coord) return false;
    read = true;
  }
  return read;
}

}  // namespace

std::optional<SlotStage> slot_stage(const Cell& cell, const Plan& plan, const layout::BoundLayout& source, const layout::BoundLayout& target,
                                    int source_bytes, int target_bytes, bool convert, std::size_t flat, std::size_t members) {
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
  if (lane.weight != 1 || block.weight != lane.extent || block.extent * lane.extent != plan.capacity || (lane.extent != 16 && lane.extent != 32))
    return std::nullopt;
  // Which side holds the cells: the one whose only lookup places the token at its cell.
  s.into_cells = places_token_in_cells(cell.target, false, plan, target, s.block, s.lane);
  if (!s.into_cells && !places_token_in_cells(cell.source, true, plan, source, s.block, s.lane))
    return std::nullopt;
  const SideForm &blocks = s.into_cells ? cell.source : cell.target, &cells = s.into_cells ? cell.target : cell.source;
  // Lanes contiguous on the blocks' side and placed on the cells' side by the lookup alone; the block by the
  // blocks' side's own lookups and strides.
  if (stride_of(blocks, s.lane) != 1 || read_by_atoms(blocks, s.lane) || stride_of(cells, s.lane) != 0 || stride_of(cells, s.block) != 0 ||
      read_by_atoms(blocks, s.dim) || read_by_atoms(cells, s.dim))
    return std::nullopt;
  for (int m : {s.dim, s.block, s.lane})
    if (selects_instance(cell, m)) return std::nullopt;
  // The dim: a plain counter, each block's dims x lanes one contiguous box.
  if (dim.coord == plan.token_coord || dim.top_of_token || cell.coords[static_cast<std::size_t>(dim.coord)].guarded ||
      stride_of(blocks, s.dim) != lane.extent || stride_of(cells, s.dim) <= 0)
    return std::nullopt;
  s.group = dim.extent % 32 == 0 ? 32 : dim.extent % 16 == 0 ? 16 : 0;
  if (s.group == 0) return std::nullopt;
  s.cells = plan.capacity;
  if (s.cells * s.group * 2 > kMostSlotStageBytes) return std::nullopt;
  return s;
}

void print_slot_stage_buffers(CodeWriter& w, const SlotStage& stage) {
  w.line("std::unique_ptr<char[]> kv_slot_buffer;  // the slot rows (print_slot_stage), allocated at the first staged iteration");
  w.line(stage.into_cells ? "std::vector<const char*> kv_block_at;  // each block's source box" : "std::vector<char*> kv_block_at;  // each block's target box");
  w.line("std::vector<int64_t> kv_slot_at;  // each token's cell");
}

void print_slot_stage(CodeWriter& w, const Cell& cell, const SlotStage& stage, const std::function<void(int)>& statements) {
  const Mode &dim = mode_of(cell, stage.dim), &block = mode_of(cell, stage.block), &lane = mode_of(cell, stage.lane);
  const int level = static_cast<int>(stage.level);
  const bool into = stage.into_cells;
  const std::int64_t lanes = lane.extent, blocks = block.extent, group = stage.group, row = group * 2, box = lanes * 2;
  const std::int64_t cells_row = (into ? cell.target : cell.source).stride[static_cast<std::size_t>(stage.dim)];
  w.line(std::string("// Every token moved: ") + (into ? "each cell written once (the cells are checked distinct at entry)" : "each block whole") +
         ", through slot rows of " + std::to_string(group) + " dims (slot_stage.hpp).");
  w.line("#if defined(__SSE2__)");
  w.open("if (n >= " + i64(stage.cells) + ")");
  w.line("if (!kv_slot_buffer) kv_slot_buffer.reset(new char[" + std::to_string(stage.cells * row + 64) + "]);");
  w.line("char* const kv_slots = kv_slot_buffer.get() + (64 - reinterpret_cast<uintptr_t>(kv_slot_buffer.get()) % 64) % 64;");
  w.line("kv_block_at.resize(" + std::to_string(blocks) + ");");
  w.line("kv_slot_at.resize(" + std::to_string(stage.cells) + ");");
  // Where each block's box starts (the dim at 0) and which cell each token takes.
  w.line("const int64_t " + dim.var + " = 0;");
  statements(level);
  w.open("for (int64_t " + block.var + " = 0; " + block.var + " < " + i64(blocks) + "; ++" + block.var + ")");
  statements(level + 1);
  w.line("kv_block_at[static_cast<size_t>(" + block.var + ")] = " + pointer_name(into) + " + " + offset_at(cell, into, level + 1) + " * 2;");
  w.open("for (int64_t " + lane.var + " = 0; " + lane.var + " < " + i64(lanes) + "; ++" + lane.var + ")");
  statements(level + 2);
  w.line("(void)" + offset_at(cell, into, level + 2) + ";");
  w.line("kv_slot_at[static_cast<size_t>(" + block.var + " * " + i64(lanes) + " + " + lane.var + ")] = " + offset_at(cell, !into, level + 2) + " - " +
         offset_at(cell, !into, level + 1) + ";");
  w.close();
  w.close();
  w.open("for (int64_t kv_group = 0; kv_group < " + i64(dim.extent) + "; kv_group += " + i64(group) + ")");
  // The group's rows of cells, on the cells' side.
  w.line(std::string(into ? "char* " : "const char* ") + "kv_rows[" + std::to_string(group) + "];");
  w.line("for (int64_t k = 0; k < " + i64(group) + "; ++k) kv_rows[k] = " + pointer_name(!into) + " + (" + offset_at(cell, !into, level) +
         " + (kv_group + k) * " + i64(cells_row) + ") * 2;");
  auto blocks_loop = [&] {
    w.open("for (int64_t kv_block = 0; kv_block < " + i64(blocks) + "; ++kv_block)");
    if (into) {
      // Each block's group of dims (one contiguous box of group x lanes) into its tokens' slot rows, the next
      // block's box prefetched beside it.
      w.line("const char* const kv_box = kv_block_at[static_cast<size_t>(kv_block)] + kv_group * " + i64(box) + ";");
      w.line("if (kv_block + 1 < " + i64(blocks) + ") for (int64_t line = 0; line < " + i64(group * box) +
             "; line += 64) kv_prefetch<64>(kv_block_at[static_cast<size_t>(kv_block + 1)] + kv_group * " + i64(box) + " + line);");
      w.line("char* kv_to[" + std::to_string(lanes) + "];");
      w.line("for (int64_t k = 0; k < " + i64(lanes) + "; ++k) kv_to[k] = kv_slots + kv_slot_at[static_cast<size_t>(kv_block * " + i64(lanes) +
             " + k)] * " + i64(row) + ";");
      w.line("const char* kv_from[" + std::to_string(group) + "];");
      w.line("for (int64_t k = 0; k < " + i64(group) + "; ++k) kv_from[k] = kv_box + k * " + i64(box) + ";");
      w.line("kv_transpose_row_groups<" + std::to_string(group / 8) + ">(kv_to, 0, kv_from, 0, " + i64(lanes) + ", false);");
    } else {
      // Each block's tokens' slot rows into its group of dims (one contiguous box of group x lanes).
      w.line("char* const kv_box = kv_block_at[static_cast<size_t>(kv_block)] + kv_group * " + i64(box) + ";");
      w.line("const char* kv_from[" + std::to_string(lanes) + "];");
      w.line("for (int64_t k = 0; k < " + i64(lanes) + "; ++k) kv_from[k] = kv_slots + kv_slot_at[static_cast<size_t>(kv_block * " + i64(lanes) +
             " + k)] * " + i64(row) + ";");
      w.line("char* kv_to[" + std::to_string(group) + "];");
      w.line("for (int64_t k = 0; k < " + i64(group) + "; ++k) kv_to[k] = kv_box + k * " + i64(box) + ";");
      w.line("kv_transpose_rows_block<2>(kv_to, 0, kv_from, 0, " + i64(lanes) + ", " + i64(group) + ", stream, true);");
    }
    w.close();
  };
  auto cells_loop = [&] {
    w.open("for (int64_t kv_cell = 0; kv_cell < " + i64(stage.cells) + "; kv_cell += 32)");
    w.line(std::string(into ? "const char* " : "char* ") + "kv_cells[32];");
    w.line("for (int64_t k = 0; k < 32; ++k) kv_cells[k] = kv_slots + (kv_cell + k) * " + i64(row) + ";");
    if (into) {
      // The slot rows, [cell][dim], into the group's target rows, 32 cells at a time.
      w.line("kv_transpose_rows_block<2>(kv_rows, kv_cell * 2, kv_cells, 0, 32, " + i64(group) + ", stream, true);");
    } else {
      // The group's source rows into the slot rows, 32 cells at a time, the next 32 cells prefetched.
      w.line("if (kv_cell + 32 < " + i64(stage.cells) + ") for (int64_t k = 0; k < " + i64(group) + "; ++k) kv_prefetch<64>(kv_rows[k] + (kv_cell + 32) * 2);");
      w.line("kv_transpose_rows_block<2>(kv_cells, 0, kv_rows, kv_cell * 2, " + i64(group) + ", 32, false, true);");
    }
    w.close();
  };
  if (into) blocks_loop(), cells_loop();
  else cells_loop(), blocks_loop();
  w.close();
  w.line("continue;");
  w.close();
  w.line("#endif");
}

}  // namespace kvlayout::emit
