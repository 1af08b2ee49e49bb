#pragma once
// Concrete evidence for a refuted obligation: logical positions with the table entries the solver chose
// and their addresses on both sides, an element value that does not survive, or an unaddressed element.
// Every counterexample is re-evaluated by the concrete evaluator before it is shown.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "layout/address.hpp"
#include "layout/block_tables.hpp"
#include "spec/dtype.hpp"

namespace kvlayout::verdict {

struct PositionWitness {
  std::vector<std::int64_t> coord;
  // Table entries the addresses below used, by display name ("block_table", or "source.block_table" when
  // both sides have a table of that name): entry -> value.
  std::map<std::string, std::map<std::int64_t, std::int64_t>> tables;
  std::optional<layout::Location> source;  // nullopt: that side could not be bound
  std::optional<layout::Location> target;
  // The concrete tables the obligation's own side was evaluated with (to rebuild this witness for another
  // pair without asking the solver again).
  std::optional<layout::BlockTables> side_tables;
};

struct ValueWitness {
  spec::DType source_type;
  spec::DType target_type;
  std::uint32_t source_bits = 0;
  std::uint32_t round_trip_bits = 0;
};

// An element of a layout's storage that no position addresses.
struct ElementWitness {
  bool on_source = true;
  int tensor = 0;
  std::int64_t instance = 0;
  std::int64_t offset = 0;
};

struct Counterexample {
  std::string summary;  // one line, in named coordinates
  std::vector<PositionWitness> positions;
  std::optional<ValueWitness> value;
  std::optional<ElementWitness> element;
  std::optional<std::int64_t> count;  // e.g. padding elements, missing positions
  std::vector<std::string> details;   // further lines (which heads are missing, ...)
};

}  // namespace kvlayout::verdict

// prove, its reports and the certificate name these types prove::Grade, prove::Reason, ...: the verdict
// vocabulary is what a proof speaks. The layer itself depends on nothing above layout.
namespace kvlayout::prove {
using namespace kvlayout::verdict;
}  // namespace kvlayout::prove
