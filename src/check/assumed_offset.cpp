#include "check/assumed_offset.hpp"

#include <limits>
#include <memory>

#include "expr/print.hpp"
#include "layout/bind_expression.hpp"
#include "spec/error.hpp"

namespace kvlayout::check {
namespace {

// The REAL tensor the formula addresses. @post a valid index into real.tensors.
std::size_t pick_tensor(const layout::BoundLayout& real, const std::optional<std::string>& name) {
  if (!name) {
    if (real.tensors.size() == 1) return 0;
    std::string names;
    for (const auto& t : real.tensors) names += (names.empty() ? "" : ", ") + t.name;
    throw spec::SpecError("", "--assumed-tensor", "no --assumed-tensor, and " + real.layout->name + " has " +
                                                      std::to_string(real.tensors.size()) + " tensors (" + names + ")",
                          "--assumed-tensor NAME naming the tensor the offset formula addresses");
  }
  for (std::size_t i = 0; i < real.tensors.size(); ++i)
    if (real.tensors[i].name == *name) return i;
  std::string names;
  for (const auto& t : real.tensors) names += (names.empty() ? "" : ", ") + t.name;
  throw spec::SpecError("", "--assumed-tensor", "\"" + *name + "\"", "a tensor of " + real.layout->name + ": " + names);
}

// The instance rule: a coordinate (one instance per value) or 0 (a single instance). Naming REAL's own
// instance coordinate keeps REAL's rule, per_range included (instance = coord - per_first); another
// coordinate has one instance per value of its whole extent.
// @post per is -1 or a coordinate index; per_first and instances the matching range.
void set_instance(const layout::BoundLayout& real, const layout::BoundTensor& of, const std::optional<std::string>& text,
                  layout::BoundTensor& t) {
  t.per = of.per;
  t.per_first = of.per_first;
  t.instances = of.instances;
  if (!text) return;
  if (*text == "0") {
    t.per = -1;
    t.per_first = 0;
    t.instances = 1;
    return;
  }
  int c = real.coord_index(*text);
  if (c < 0) throw spec::SpecError("", "--assumed-instance", "\"" + *text + "\"", "a coordinate name of the content, or 0");
  if (c == of.per) return;
  t.per = c;
  t.per_first = 0;
  t.instances = real.coord_extents[static_cast<std::size_t>(c)];
}

}  // namespace

layout::BoundLayout assumed_from_offset(const layout::BoundLayout& real, const AssumedOffset& assumed) {
  const std::size_t ti = pick_tensor(real, assumed.tensor);
  const layout::BoundTensor& of = real.tensors[ti];
  layout::BoundLayout out = real;
  auto decl = std::make_shared<spec::Layout>(*real.layout);
  decl->name = "assumed-offset";
  decl->engine = "the offset formula given by --assumed-offset";
  decl->file = "";  // errors name the flag (the view's paths), not a file
  decl->control = true;
  decl->cite.reset();
  decl->holds.reset();
  decl->tensors.clear();  // the bound tensor below is the whole truth; nothing reads the declared ones
  out.layout = decl;

  layout::BoundView v;
  v.name = of.name;
  v.path = "--assumed-offset";
  v.holds = assumed.holds ? layout::bind_expression(real, *assumed.holds, "", "--assumed-holds", true) : expr::literal(1);
  v.layout_holds = v.holds;
  v.offset = 0;
  // The formula is an element offset into REAL's allocation. The axis is as long as a byte offset can be,
  // so an offset past the allocation is located (and shown as such) rather than cut off at the axis; the
  // tensor's size (REAL's) is what in-bounds checks it against.
  v.extents = {std::numeric_limits<std::int64_t>::max() / real.element_bytes()};
  v.strides = {1};
  v.index = {layout::bind_expression(real, assumed.offset, "", "--assumed-offset", false)};
  v.index_paths = {"--assumed-offset"};
  v.index_texts = {assumed.offset};

  layout::BoundTensor t;
  t.name = of.name;
  t.path = "--assumed-offset";
  t.size = of.size;
  set_instance(real, of, assumed.instance, t);
  t.views = {std::move(v)};
  out.tensors = {std::move(t)};
  return out;
}

}  // namespace kvlayout::check
