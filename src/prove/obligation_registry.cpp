#include "prove/obligation_registry.hpp"

#include <stdexcept>

#include "prove/obligations.hpp"

namespace kvlayout::prove {
namespace {

bool has(const std::vector<ObligationResult>& results, const std::string& name, Side side, Status status) {
  for (const auto& r : results)
    if (r.name == name && r.side == side && r.status == status) return true;
  return false;
}

ObligationRef same_side(const std::string& name) { return {name, Side::Pair, true}; }
ObligationRef on(const std::string& name, Side side) { return {name, side, false}; }

const Side kSource = Side::Source, kTarget = Side::Target, kPair = Side::Pair;

}  // namespace

bool Results::proved(const std::string& name, Side side) const { return has(results_, name, side, Status::Proved); }
bool Results::refuted(const std::string& name, Side side) const { return has(results_, name, side, Status::Refuted); }

const std::vector<ObligationRow>& obligation_registry() {
  // The controls' known-bad pairs are shipped declarations (the reference layout against a broken or
  // narrower one); `defined` has none, since a declaration failing it is bad input (exit 2), not a
  // grade: its control is tests/prove/defined_test.cpp.
  static const std::vector<ObligationRow> rows = {
      {"fits", {kPair}, {}, {}, {Reason::ContentMismatch}, false, false,
       "both layouts hold the same content, with the same coordinate extents",
       "vllm-mla", "vllm-flash-nhd",
       [](Session&, const Pair& p, Side, const Results&) { return check_content(p.source, p.target); }},
      {"fits", {kSource, kTarget}, {}, {}, {Reason::DoesNotFit}, true, false,
       "the layout's requirements hold on the cache shape",
       "broken-nofit", "vllm-flash-nhd",
       [](Session&, const Pair& p, Side side, const Results&) { return check_fits(p.side(side), side); }},
      {"defined", {kSource, kTarget}, {same_side("fits")}, {}, {}, true, true,
       "every domain and index expression evaluates without a zero divisor or 64-bit overflow (else exit 2)",
       "", "",
       [](Session& s, const Pair& p, Side side, const Results&) { return check_defined(s, p, side); }},
      {"in-bounds", {kSource, kTarget}, {same_side("fits")}, {}, {Reason::OutOfBounds}, true, false,
       "every held position's indices, table entries and element offset lie within their ranges",
       "vllm-flash-nhd", "broken-oob",
       [](Session& s, const Pair& p, Side side, const Results&) { return check_in_bounds(s, p, side); }},
      {"injective", {kSource, kTarget}, {same_side("fits")}, {same_side("in-bounds")}, {Reason::Collision}, true, false,
       "no two held positions share an element",
       "vllm-flash-nhd", "broken-collide",
       [](Session& s, const Pair& p, Side side, const Results& r) {
         return check_injective(s, p, side, r.proved("in-bounds", side));
       }},
      {"covers", {kPair}, {on("fits", kPair), on("fits", kSource), on("fits", kTarget)}, {}, {Reason::MissingPositions}, false, false,
       "every position the target holds, the source holds",
       "vllm-flash-nhd-tp2-r0", "vllm-flash-nhd",
       [](Session& s, const Pair& p, Side, const Results&) { return check_covers(s, p); }},
      {"carries", {kPair}, {on("fits", kPair), on("fits", kSource), on("fits", kTarget)}, {}, {Reason::DroppedPositions}, false, false,
       "every position the source holds, the target holds",
       "vllm-flash-nhd", "vllm-flash-nhd-tp2-r0",
       [](Session& s, const Pair& p, Side, const Results&) { return check_carries(s, p); }},
      {"values", {kPair}, {}, {}, {Reason::LossyValues, Reason::ScaleMismatch}, false, false,
       "every source element value, and its quantisation scale, survives the conversion and back",
       "vllm-flash-nhd", "vllm-flash-nhd-fp8",
       [](Session& s, const Pair& p, Side, const Results&) { return check_values(s, p, *p.source.layout, *p.target.layout); }},
      {"padding", {kSource}, {on("fits", kSource), on("in-bounds", kSource), on("injective", kSource)}, {}, {Reason::Padding}, true, false,
       "every element of the source's storage is addressed by some position",
       "vllm-flash-nhd", "vllm-flash-hnd",
       [](Session& s, const Pair& p, Side, const Results&) { return check_padding(s, p); }},
  };
  return rows;
}

const ObligationRow& obligation(const std::string& name) {
  for (const auto& row : obligation_registry())
    if (row.name == name) return row;
  throw std::logic_error("no obligation named " + name);
}

}  // namespace kvlayout::prove
