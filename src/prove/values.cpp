// values: the conversion from the source's element type to the target's is exact iff every source value
// survives S -> T -> S bit for bit (NaN payloads aside: a NaN must come back as a NaN). Decided
// exhaustively for element types of at most 16 bits and with Z3's floating-point theory for fp32; any
// counterexample is re-checked by the software conversion. A quantisation scale must be kept as it is.
#include <cmath>

#include "layout/convert.hpp"
#include "layout/domain_cells.hpp"
#include "prove/internal_error.hpp"
#include "prove/obligations.hpp"

namespace kvlayout::prove {
namespace {

using spec::DType;

bool survives(DType from, DType to, std::uint32_t bits) {
  std::uint32_t back = layout::convert(to, from, layout::convert(from, to, bits));
  if (layout::is_nan(from, bits)) return layout::is_nan(from, back);
  return back == bits;
}

// The failing pattern a reader understands best: finite, nonzero, closest to 1 in magnitude.
std::optional<std::uint32_t> exhaustive_counterexample(DType from, DType to) {
  const std::uint32_t count = 1u << spec::dtype_bits(from);
  std::optional<std::uint32_t> best;
  double best_distance = INFINITY;
  for (std::uint32_t bits = 0; bits < count; ++bits) {
    if (survives(from, to, bits)) continue;
    double v = layout::decode(from, bits);
    double distance = std::isfinite(v) && v != 0 ? std::fabs(std::log2(std::fabs(v))) : 1e9;
    if (!best || distance < best_distance) {
      best = bits;
      best_distance = distance;
    }
  }
  return best;
}

// fp32 source: ask Z3 for a float x with round_trip(x) != x (bitwise). Z3's FP sorts follow IEEE, so
// float8_e4m3fn (no infinity, max 448) is modelled as IEEE (4, 4) restricted to |x| <= 1, where the two
// agree; the software conversion re-checks whatever Z3 returns.
std::optional<std::uint32_t> fp32_counterexample(Session& session, DType to, Answer& answer, std::string& why) {
  z3::context& c = session.ctx();
  z3::expr x = c.fpa_const("x", 8, 24);
  z3::expr rne = c.fpa_rounding_mode();  // RNE by default
  (void)rne;
  z3::sort f32 = c.fpa_sort(8, 24);
  z3::expr back = x;
  z3::expr guard = !z3::expr(c, Z3_mk_fpa_is_nan(c, x));
  auto small = [&] { return z3::expr(c, Z3_mk_fpa_leq(c, z3::expr(c, Z3_mk_fpa_abs(c, x)), c.fpa_val(1.0f))); };
  switch (to) {
    case DType::bf16: back = z3::fpa_to_fpa(z3::fpa_to_fpa(x, c.fpa_sort(8, 8)), f32); break;
    case DType::fp16: back = z3::fpa_to_fpa(z3::fpa_to_fpa(x, c.fpa_sort(5, 11)), f32); break;
    case DType::fp8_e5m2: back = z3::fpa_to_fpa(z3::fpa_to_fpa(x, c.fpa_sort(5, 3)), f32); break;
    case DType::fp8_e4m3:
      back = z3::fpa_to_fpa(z3::fpa_to_fpa(x, c.fpa_sort(4, 4)), f32);
      guard = guard && small();
      break;
    case DType::int8:
      back = z3::sbv_to_fpa(z3::fpa_to_sbv(x, 8), f32);
      guard = guard && small();
      break;
    case DType::uint8:
      back = z3::ubv_to_fpa(z3::fpa_to_ubv(x, 8), f32);
      guard = guard && small() && !z3::expr(c, Z3_mk_fpa_is_negative(c, x));
      break;
    default: answer = Answer::Unsat; return std::nullopt;
  }
  z3::expr x_bits = z3::expr(c, Z3_mk_fpa_to_ieee_bv(c, x));
  z3::expr back_bits = z3::expr(c, Z3_mk_fpa_to_ieee_bv(c, back));
  Query s(session, "values fp32 -> " + spec::dtype_name(to));
  s.add(guard && x_bits != back_bits);
  answer = s.check();
  why = s.unknown_reason();
  if (answer != Answer::Sat) return std::nullopt;
  std::uint64_t bits = 0;
  if (!s.model().eval(x_bits, true).is_numeral_u64(bits)) throw InternalError("fp32 model value is not a bit-vector");
  return static_cast<std::uint32_t>(bits);
}

// The first position both sides hold (for showing where a value would change); empty if none found.
std::optional<std::vector<std::int64_t>> common_position(const Pair& pair) {
  if (!pair.same_content() || !pair.source.fits() || !pair.target.fits()) return std::nullopt;
  auto cs = layout::cells(pair.source.coord_extents, {layout::held_predicate(pair.source), layout::held_predicate(pair.target)});
  if (!cs) return std::nullopt;
  for (const auto& cell : *cs) {
    if (!cell.truth[0] || !cell.truth[1]) continue;
    std::vector<std::int64_t> coord;
    for (const auto& r : cell.ranges) coord.push_back(r.lo);
    return coord;
  }
  return std::nullopt;
}

std::string scale_text(const std::optional<spec::ScaleDecl>& s) {
  if (!s) return "no scale";
  std::string per;
  for (const auto& p : s->per) per += (per.empty() ? "" : ", ") + p;
  return "an " + spec::dtype_name(s->dtype) + " scale per (" + per + ")";
}

bool same_scale(const std::optional<spec::ScaleDecl>& a, const std::optional<spec::ScaleDecl>& b) {
  if (!a || !b) return !a && !b;
  return a->dtype == b->dtype && a->per == b->per;
}

}  // namespace

ObligationResult check_values(Session& session, const Pair& pair, const spec::Layout& source, const spec::Layout& target) {
  ObligationResult r;
  r.name = "values";
  r.side = Side::Pair;
  const DType from = source.dtype, to = target.dtype;
  auto position = common_position(pair);
  auto with_position = [&](Counterexample& c) {
    if (position) c.positions.push_back(make_witness(pair, *position));
  };

  const bool scales_match = same_scale(source.scale, target.scale);
  const std::string scales = source.name + " keeps " + scale_text(source.scale) + "; " + target.name + " keeps " +
                             scale_text(target.scale);
  auto scale_mismatch = [&] {
    r.status = Status::Refuted;
    r.reason = Reason::ScaleMismatch;
    r.detail = scales;
    Counterexample c;
    c.summary = "a stored value v means v * scale on one side and something else on the other: " + scales;
    with_position(c);
    r.counterexample = c;
    return r;
  };
  if (from == to) {
    r.method = "declaration";
    if (!scales_match) return scale_mismatch();
    r.detail = "same element type (" + spec::dtype_name(from) + ")" +
               (source.scale ? " and the same scale handling" : "") + ": values move bit for bit";
    return r;
  }
  std::optional<std::uint32_t> bad;
  if (spec::dtype_bits(from) <= 16) {
    r.method = "exhaustive (" + std::to_string(1u << spec::dtype_bits(from)) + " values)";
    bad = exhaustive_counterexample(from, to);
  } else {
    r.method = "z3 floating point";
    Answer a;
    std::string why;
    bad = fp32_counterexample(session, to, a, why);
    if (a == Answer::Unknown) {
      set_solver_limit(r, why);
      return r;
    }
  }
  if (!bad) {
    if (!scales_match) return scale_mismatch();
    r.detail = "every " + spec::dtype_name(from) + " value survives " + spec::dtype_name(from) + " -> " +
               spec::dtype_name(to) + " -> " + spec::dtype_name(from) + " (NaN payloads aside)";
    return r;
  }
  if (survives(from, to, *bad))
    throw InternalError("values counterexample " + layout::format_bits(from, *bad) + " does not reproduce");
  std::uint32_t back = layout::convert(to, from, layout::convert(from, to, *bad));
  r.status = Status::Refuted;
  r.reason = Reason::LossyValues;
  r.detail = spec::dtype_name(from) + " " + layout::format_decimal(from, *bad) + " becomes " +
             layout::format_decimal(from, back) + " after " + spec::dtype_name(from) + " -> " + spec::dtype_name(to) +
             " -> " + spec::dtype_name(from);
  Counterexample c;
  c.summary = r.detail + " (" + layout::format_bits(from, *bad) + " -> " + layout::format_bits(from, back) + ")";
  c.value = ValueWitness{from, to, *bad, back};
  if (!scales_match) c.details.push_back("and the quantisation scale differs: " + scales);
  with_position(c);
  r.counterexample = c;
  return r;
}

}  // namespace kvlayout::prove
