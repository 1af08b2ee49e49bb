// The geometry check, phases 2 and 3: how the records' allocations relate, and whether every declared
// instance is there. A declaration's tensor instances are separate allocations (emit passes one base per
// instance; prove assumes writing one never touches another), so two instances whose bytes overlap in the
// real process are a mismatch even when each record on its own matches: writing one clobbers the other.
#include <algorithm>
#include <limits>
#include <map>

#include "check/geometry_mismatch.hpp"
#include "layout/view_algebra.hpp"
#include "spec/error.hpp"

namespace kvlayout::check::geometry_detail {
namespace {

// The bytes a record's declared instance occupies in the process: from the start of its storage
// (data_ptr - storage_offset x element_size) for the declared allocation size.
struct Allocation {
  std::uint64_t start = 0;
  std::uint64_t end = 0;  // exclusive
  std::size_t record = 0;
};

Allocation allocation_of(const layout::BoundLayout& bound, const TensorDump& dump, std::size_t i, const Target& target) {
  const TensorRecord& r = dump.records[i];
  const auto esz = static_cast<std::uint64_t>(r.element_size);  // >= 1: the loader checked it against the dtype
  const auto offset = static_cast<std::uint64_t>(r.storage_offset);
  if (offset > r.data_ptr / esz)
    throw spec::SpecError(dump.file, r.path + "/data_ptr",
                          "data_ptr " + hex(r.data_ptr) + " below storage_offset " + std::to_string(r.storage_offset) +
                              " x element_size " + std::to_string(r.element_size),
                          "a data_ptr at least storage_offset x element_size (the storage starts at data_ptr minus it)");
  Allocation a;
  a.start = r.data_ptr - offset * esz;
  a.record = i;
  const auto& t = bound.tensors[static_cast<std::size_t>(target.tensor)];
  const auto bytes = static_cast<std::uint64_t>(layout::byte_offset(t.size, bound.element_bytes()));
  if (a.start > std::numeric_limits<std::uint64_t>::max() - bytes)
    throw spec::SpecError(dump.file, r.path + "/data_ptr", "an allocation of " + std::to_string(bytes) +
                                                               " bytes from " + hex(a.start) + " past 2^64",
                          "a data_ptr whose allocation fits in a 64-bit address space");
  a.end = a.start + bytes;
  return a;
}

std::string who(const TensorRecord& r) {
  return r.tensor + (r.view ? "." + *r.view : "") + " instance " + std::to_string(r.instance) + " (" + r.path + ")";
}

}  // namespace

void compare_sharing(const layout::BoundLayout& bound, const TensorDump& dump,
                     const std::vector<std::optional<Target>>& targets, std::vector<Mismatch>& out) {
  // One allocation per declared instance: the first record of each instance fixes its start.
  std::map<std::pair<int, std::int64_t>, Allocation> instances;
  for (std::size_t i = 0; i < dump.records.size(); ++i) {
    if (!targets[i]) continue;
    Allocation a = allocation_of(bound, dump, i, *targets[i]);
    const TensorRecord& r = dump.records[i];
    auto inserted = instances.emplace(std::make_pair(targets[i]->tensor, r.instance), a);
    const Allocation& first = inserted.first->second;
    if (inserted.second || first.start == a.start) continue;
    const TensorRecord& f = dump.records[first.record];
    Mismatch m;
    m.record = r.path;
    m.tensor = r.tensor;
    m.instance = r.instance;
    m.view = r.view;
    m.field = "data_ptr";
    m.declared = hex(first.start);
    m.observed = hex(a.start);
    m.extra = {{"other_record", f.path}};
    m.text = "views of one allocation disagree on where it starts: " + who(f) + " at " + hex(first.start) + ", " +
             who(r) + " at " + hex(a.start) + " (data_ptr - storage_offset x element_size)";
    out.push_back(m);
  }
  // Overlapping allocations of different declared instances, by a sweep over starts.
  std::vector<Allocation> sorted;
  for (const auto& entry : instances) sorted.push_back(entry.second);
  std::sort(sorted.begin(), sorted.end(), [](const Allocation& a, const Allocation& b) {
    return a.start != b.start ? a.start < b.start : a.record < b.record;
  });
  std::size_t reach = 0;  // the allocation seen so far that ends last
  for (std::size_t k = 1; k < sorted.size(); ++k) {
    if (sorted[reach].end > sorted[k].start) {
      const TensorRecord& a = dump.records[sorted[reach].record];
      const TensorRecord& b = dump.records[sorted[k].record];
      const std::uint64_t lo = sorted[k].start, hi = std::min(sorted[reach].end, sorted[k].end);
      Mismatch m;
      m.record = b.path;
      m.tensor = b.tensor;
      m.instance = b.instance;
      m.view = b.view;
      m.field = "data_ptr";
      m.declared = "an allocation of its own";
      m.observed = "bytes [" + hex(lo) + ", " + hex(hi) + ") shared with " + a.path;
      m.extra = {{"other_record", a.path}, {"other_tensor", a.tensor}, {"other_instance", a.instance}};
      m.text = who(a) + " and " + who(b) + " share bytes [" + hex(lo) + ", " + hex(hi) +
               ") of one allocation, but the declaration makes them separate allocations (declare them as views "
               "of one tensor instance)";
      out.push_back(m);
    }
    if (sorted[k].end > sorted[reach].end) reach = k;
  }
}

void compare_coverage(const layout::BoundLayout& bound, const TensorDump& dump,
                      const std::vector<std::optional<Target>>& targets, std::vector<Mismatch>& out) {
  for (std::size_t t = 0; t < bound.tensors.size(); ++t) {
    const auto& tensor = bound.tensors[t];
    std::vector<bool> present(static_cast<std::size_t>(tensor.instances), false);
    for (std::size_t i = 0; i < dump.records.size(); ++i)
      if (targets[i] && targets[i]->tensor == static_cast<int>(t))
        present[static_cast<std::size_t>(dump.records[i].instance)] = true;  // resolve() checked the range
    std::int64_t have = std::count(present.begin(), present.end(), true);
    if (have == tensor.instances) continue;
    std::string missing;
    int listed = 0;
    for (std::size_t k = 0; k < present.size() && listed < 8; ++k)
      if (!present[k]) missing += (listed++ ? ", " : "") + std::to_string(k);
    if (tensor.instances - have > listed) missing += ", ...";
    Mismatch m;
    m.record = "/tensors";
    m.tensor = tensor.name;
    m.field = "instance";
    m.declared = tensor.instances;
    m.observed = have;
    m.extra = {{"missing", missing}};
    m.text = "declared " + std::to_string(tensor.instances) + " instance(s) of " + tensor.name + ", the dump has " +
             std::to_string(have) + " (missing: " + missing + ")";
    out.push_back(m);
  }
}

}  // namespace kvlayout::check::geometry_detail
