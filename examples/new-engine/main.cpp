// Calls the kernel kvlayout emitted for vllm-flash-nhd -> acme-serve on the small cache shape, and checks
// every moved element against Acme Serve's own offset formula, written out here by hand.
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>
#include <algorithm>

extern "C" int acme_from_vllm(void* const* src, void* const* dst, const int32_t* const* src_tables,
                              const int32_t* const* dst_tables, int64_t num_tokens, int num_threads);

int main() {
  const int64_t L = 2, H = 4, D = 16, T = 67;                 // specs/caches/small.json
  const int64_t vllm_bs = 16, vllm_nb = (T + vllm_bs - 1) / vllm_bs;
  const int64_t acme_bs = 32, acme_nb = (T + acme_bs - 1) / acme_bs, half = H * acme_bs * D;
  auto value = [&](int64_t l, int64_t kv, int64_t t, int64_t h, int64_t d) {
    return static_cast<uint16_t>(0x3c00 + ((l * 131 + kv * 71 + t * 17 + h * 5 + d) & 0x3ff));
  };

  // vLLM's cache: per layer [2][num_blocks][16][H][D], blocks handed out in a shuffled order.
  std::vector<int32_t> vllm_table(vllm_nb), acme_table(acme_nb);
  for (int32_t i = 0; i < vllm_nb; ++i) vllm_table[i] = i;
  for (int32_t i = 0; i < acme_nb; ++i) acme_table[i] = acme_nb - 1 - i;
  std::shuffle(vllm_table.begin(), vllm_table.end(), std::mt19937(7));
  std::vector<std::vector<uint16_t>> vllm(L, std::vector<uint16_t>(2 * vllm_nb * vllm_bs * H * D));
  std::vector<std::vector<uint16_t>> acme(L, std::vector<uint16_t>(acme_nb * 2 * half, 0xffff));
  for (int64_t l = 0; l < L; ++l)
    for (int64_t kv = 0; kv < 2; ++kv)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t d = 0; d < D; ++d)
            vllm[l][((kv * vllm_nb + vllm_table[t / vllm_bs]) * vllm_bs + t % vllm_bs) * H * D + h * D + d] = value(l, kv, t, h, d);

  void* src[] = {vllm[0].data(), vllm[1].data()};
  void* dst[] = {acme[0].data(), acme[1].data()};
  const int32_t* src_tables[] = {vllm_table.data()};
  const int32_t* dst_tables[] = {acme_table.data()};
  int code = acme_from_vllm(src, dst, src_tables, dst_tables, T, 2);
  if (code != 0) {
    std::printf("acme_from_vllm returned %d\n", code);
    return 1;
  }
  int64_t checked = 0, wrong = 0;
  for (int64_t l = 0; l < L; ++l)
    for (int64_t kv = 0; kv < 2; ++kv)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t d = 0; d < D; ++d, ++checked) {
            int64_t at = acme_table[t / acme_bs] * 2 * half + kv * half + h * acme_bs * D + (t % acme_bs) * D + d;
            wrong += acme[l][at] != value(l, kv, t, h, d);
          }
  std::printf("acme_from_vllm moved %lld tokens: %lld positions checked, %lld wrong\n", static_cast<long long>(T),
              static_cast<long long>(checked), static_cast<long long>(wrong));
  return wrong == 0 ? 0 : 1;
}
