#include "enumerate/reference_move.hpp"

#include "layout/convert.hpp"

namespace kvlayout::enumerate {

std::int64_t reference_move(const Enumerated& S, const Enumerated& T, std::size_t k, std::int64_t num_tokens,
                            const Storage& src, Storage& dst) {
  const AddressMap& ms = S.maps[k];
  const AddressMap& mt = T.maps[k];
  const layout::BoundLayout& b = *S.bound;
  const int token = b.coord_index("token");
  // Positions are numbered row-major: the token is (p / inner) % extent.
  std::int64_t inner = 1;
  for (std::size_t c = token < 0 ? 0 : static_cast<std::size_t>(token) + 1; token >= 0 && c < b.coord_extents.size(); ++c)
    inner *= b.coord_extents[c];
  const std::int64_t token_extent = token < 0 ? 1 : b.coord_extents[static_cast<std::size_t>(token)];
  const spec::DType from = S.layout->dtype, to = T.layout->dtype;
  std::int64_t moved = 0;
  for (std::size_t p = 0; p < ms.element.size(); ++p) {
    std::int64_t es = ms.element[p], et = mt.element[p];
    if (es < 0 || et < 0) continue;
    if (token >= 0 && (static_cast<std::int64_t>(p) / inner) % token_extent >= num_tokens) continue;
    dst.set(et, layout::convert(from, to, src.get(es)));
    ++moved;
  }
  return moved;
}

}  // namespace kvlayout::enumerate
