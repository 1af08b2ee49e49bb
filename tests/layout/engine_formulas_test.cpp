// For every shipped engine declaration: the evaluator's address equals the engine's own offset formula
// (docs: shared/reference/engine-layouts.md), written out here by hand, at corners, block boundaries and
// seeded random coordinates, with identity and random block tables, on `small` and on a production shape.
#include <catch2/catch.hpp>
#include <functional>
#include <random>

#include "layout/address.hpp"
#include "spec/catalog.hpp"

using namespace kvlayout;

namespace {

using I = std::int64_t;

// Sizes read from the cache shape, as an engine's code would see them.
struct Sizes {
  I L = 0, H = 0, D = 0, T = 0, C = 0;  // C = MLA latent width
};

// A logical position; for mla-latent, kv/h/d are unused and c is the latent channel.
struct Pos {
  I l = 0, kv = 0, t = 0, h = 0, d = 0, c = 0;
};

struct Expected {
  std::string tensor;
  I instance;
  I offset;
  bool held = true;
};

using Table = std::function<I(I)>;  // entry of the layout's (first) table
using Formula = std::function<Expected(const Sizes&, const Pos&, const Table&)>;

I ceil_div(I a, I b) { return (a + b - 1) / b; }

std::vector<Pos> sample_positions(const Sizes& s, bool mla) {
  std::vector<Pos> out;
  std::mt19937_64 rng(1234);
  auto pick = [&](I n) { return std::uniform_int_distribution<I>(0, n - 1)(rng); };
  std::vector<I> tokens = {0, 1, 15, 16, 17, 31, 32, 63, 64, 65, s.T - 1, s.T / 2};
  for (int i = 0; i < 24; ++i) tokens.push_back(pick(s.T));
  for (I t : tokens) {
    if (t < 0 || t >= s.T) continue;
    Pos p;
    p.t = t;
    p.l = pick(s.L);
    if (mla) {
      p.c = pick(s.C);
    } else {
      p.kv = pick(2);
      p.h = pick(s.H);
      p.d = pick(s.D);
    }
    out.push_back(p);
  }
  Pos last;
  last.l = s.L - 1;
  last.t = s.T - 1;
  if (mla) last.c = s.C - 1;
  else { last.kv = 1; last.h = s.H - 1; last.d = s.D - 1; }
  out.push_back(last);
  out.push_back(Pos{});
  return out;
}

void check_engine(const std::string& name, const std::string& cache_name, const Formula& formula) {
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  auto decl = spec::load_layout(catalog.find_layout(name).string());
  auto cache = spec::load_cache(catalog.find_cache(cache_name).string());
  layout::BoundLayout bound = layout::bind(decl, cache);
  INFO(name << " on " << cache_name);
  REQUIRE(bound.fits());
  Sizes s;
  s.L = *cache.get("num_layers");
  s.T = *cache.get("num_tokens");
  const bool mla = decl->content.name == "mla-latent";
  if (mla) s.C = *cache.get("kv_lora_rank") + *cache.get("qk_rope_head_dim");
  else { s.H = *cache.get("num_kv_heads"); s.D = *cache.get("head_size"); }

  std::vector<layout::BlockTables> table_sets = {layout::identity_tables(bound), layout::random_tables(bound, 7),
                                                 layout::reversed_tables(bound)};
  for (std::size_t which = 0; which < table_sets.size(); ++which) {
    const layout::BlockTables& tables = table_sets[which];
    Table table = [&](I i) { return tables.entry(0, i); };
    for (const Pos& p : sample_positions(s, mla)) {
      std::vector<I> coord = mla ? std::vector<I>{p.l, p.t, p.c} : std::vector<I>{p.l, p.kv, p.t, p.h, p.d};
      Expected want = formula(s, p, table);
      layout::Location got = layout::locate(bound, coord, tables);
      INFO("tables #" << which << " at " << layout::format_coordinate(bound, coord));
      if (!want.held) {
        CHECK(got.placement == layout::Placement::NotHeld);
        continue;
      }
      REQUIRE(got.placement == layout::Placement::Held);
      const auto& tensor = bound.tensors.at(static_cast<std::size_t>(got.address.tensor));
      CHECK(tensor.name == want.tensor);
      CHECK(got.address.instance == want.instance);
      CHECK(got.address.offset == want.offset);
      CHECK(got.address.offset < tensor.size);
    }
  }
}

void check_everywhere(const std::string& name, const Formula& f, bool mla = false) {
  check_engine(name, "small", f);
  if (mla) {
    check_engine(name, "deepseek-v3", f);
  } else {
    check_engine(name, "llama-3.1-70b", f);
    check_engine(name, "qwen2.5-7b", f);
  }
}

}  // namespace

TEST_CASE("vLLM FlashAttention NHD/HND: ((kv*NB + b)*BS + o)*H*D + h*D + d and the HND transpose", "[layout][engines]") {
  check_everywhere("vllm-flash-nhd", [](const Sizes& s, const Pos& p, const Table& bt) {
    I BS = 16, NB = ceil_div(s.T, BS), b = bt(p.t / BS), o = p.t % BS;
    return Expected{"kv_cache", p.l, ((p.kv * NB + b) * BS + o) * s.H * s.D + p.h * s.D + p.d};
  });
  check_everywhere("vllm-flash-hnd", [](const Sizes& s, const Pos& p, const Table& bt) {
    I BS = 16, NB = ceil_div(s.T, BS), b = bt(p.t / BS), o = p.t % BS;
    return Expected{"kv_cache", p.l, ((p.kv * NB + b) * s.H + p.h) * BS * s.D + o * s.D + p.d};
  });
  check_everywhere("vllm-flash-nhd-fp8", [](const Sizes& s, const Pos& p, const Table& bt) {
    I BS = 16, NB = ceil_div(s.T, BS), b = bt(p.t / BS), o = p.t % BS;
    return Expected{"kv_cache", p.l, ((p.kv * NB + b) * BS + o) * s.H * s.D + p.h * s.D + p.d};
  });
}

TEST_CASE("vLLM FlashInfer NHD/HND and FlashInfer's own paged layouts: blocks first", "[layout][engines]") {
  Formula nhd = [](const Sizes& s, const Pos& p, const Table& bt) {
    I BS = 16, b = bt(p.t / BS), o = p.t % BS;
    return Expected{"", p.l, ((b * 2 + p.kv) * BS + o) * s.H * s.D + p.h * s.D + p.d};
  };
  Formula hnd = [](const Sizes& s, const Pos& p, const Table& bt) {
    I BS = 16, b = bt(p.t / BS), o = p.t % BS;
    return Expected{"", p.l, ((b * 2 + p.kv) * s.H + p.h) * BS * s.D + o * s.D + p.d};
  };
  auto named = [](Formula f, std::string tensor) {
    return [f, tensor](const Sizes& s, const Pos& p, const Table& bt) {
      Expected e = f(s, p, bt);
      e.tensor = tensor;
      return e;
    };
  };
  check_everywhere("vllm-flashinfer-nhd", named(nhd, "kv_cache"));
  check_everywhere("vllm-flashinfer-hnd", named(hnd, "kv_cache"));
  check_everywhere("flashinfer-nhd", named(nhd, "paged_kv_cache"));
  check_everywhere("flashinfer-hnd", named(hnd, "paged_kv_cache"));
}

TEST_CASE("vLLM packed K/V (#44455): ((b*BS + o)*H + h)*2D + kv*D + d and HND", "[layout][engines]") {
  check_everywhere("vllm-packed-nhd", [](const Sizes& s, const Pos& p, const Table& bt) {
    I BS = 16, b = bt(p.t / BS), o = p.t % BS;
    return Expected{"kv_cache", p.l, ((b * BS + o) * s.H + p.h) * 2 * s.D + p.kv * s.D + p.d};
  });
  check_everywhere("vllm-packed-hnd", [](const Sizes& s, const Pos& p, const Table& bt) {
    I BS = 16, b = bt(p.t / BS), o = p.t % BS;
    return Expected{"kv_cache", p.l, ((b * s.H + p.h) * BS + o) * 2 * s.D + p.kv * s.D + p.d};
  });
}

TEST_CASE("vLLM legacy PagedAttention: reshape_and_cache_kernel's tgt_key_idx and tgt_value_idx", "[layout][engines]") {
  check_everywhere("vllm-paged-legacy", [](const Sizes& s, const Pos& p, const Table& bt) {
    I BS = 16, x = 8, NB = ceil_div(s.T, BS), b = bt(p.t / BS), o = p.t % BS;
    if (p.kv == 0)
      return Expected{"kv_cache", p.l, (((b * s.H + p.h) * (s.D / x) + p.d / x) * BS + o) * x + p.d % x};
    return Expected{"kv_cache", p.l, NB * BS * s.H * s.D + ((b * s.H + p.h) * s.D + p.d) * BS + o};
  });
}

TEST_CASE("vLLM tensor-parallel shards hold their rank's heads at rank-local indices", "[layout][engines]") {
  for (I rank : {0, 1}) {
    check_everywhere("vllm-flash-nhd-tp2-r" + std::to_string(rank), [rank](const Sizes& s, const Pos& p, const Table& bt) {
      I BS = 16, NB = ceil_div(s.T, BS), Hl = s.H / 2, first = rank * Hl, b = bt(p.t / BS), o = p.t % BS;
      if (p.h < first || p.h >= first + Hl) return Expected{"", 0, 0, false};
      return Expected{"kv_cache", p.l, ((p.kv * NB + b) * BS + o) * Hl * s.D + (p.h - first) * s.D + p.d};
    });
  }
}

TEST_CASE("vLLM tensor-parallel shards replicate the only KV head when tp_size > num_kv_heads", "[layout][engines]") {
  spec::Catalog catalog(KVLAYOUT_SPECS_DIR);
  auto cache = spec::load_cache(catalog.find_cache("small").string());
  for (const char* name : {"vllm-flash-nhd-tp2-r0", "vllm-flash-nhd-tp2-r1"}) {
    auto decl = spec::load_layout(catalog.find_layout(name).string());
    auto bound = layout::bind(decl, cache, {{"num_kv_heads", 1}});
    REQUIRE(bound.fits());
    auto tables = layout::identity_tables(bound);
    std::vector<I> head0 = {1, 1, 20, 0, 3};
    auto loc = layout::locate(bound, head0, tables);
    INFO(name);
    REQUIRE(loc.placement == layout::Placement::Held);
    CHECK(loc.address.offset == ((1 * 5 + 1) * 16 + 4) * 1 * 16 + 3);
  }
}

TEST_CASE("vLLM MLA and SGLang MLA: one latent row of 576 per token", "[layout][engines]") {
  check_everywhere(
      "vllm-mla",
      [](const Sizes& s, const Pos& p, const Table& bt) {
        I BS = 16;
        return Expected{"kv_cache", p.l, (bt(p.t / BS) * BS + p.t % BS) * s.C + p.c};
      },
      true);
  check_everywhere(
      "sglang-mla", [](const Sizes& s, const Pos& p, const Table& pt) { return Expected{"kv_buffer", p.l, pt(p.t) * s.C + p.c}; },
      true);
  check_everywhere(
      "lmcache-mla", [](const Sizes& s, const Pos& p, const Table&) { return Expected{"memory_object", 0, (p.l * s.T + p.t) * s.C + p.c}; },
      true);
}

TEST_CASE("SGLang MHA pool: separate K and V buffers, (slot*H + h)*D + d, slot 0 reserved", "[layout][engines]") {
  check_everywhere("sglang-mha", [](const Sizes& s, const Pos& p, const Table& pt) {
    I slot = pt(p.t);  // page_size 1: pages are slots, handed out from 1
    return Expected{p.kv == 0 ? "k_buffer" : "v_buffer", p.l, (slot * s.H + p.h) * s.D + p.d};
  });
}

TEST_CASE("SGLang HiCache host layouts: layer_first, page_first, page_first_direct, page_head", "[layout][engines]") {
  constexpr I PS = 64;  // a constant: the lambdas use it without capturing it
  check_everywhere("sglang-host-layer-first", [](const Sizes& s, const Pos& p, const Table& pt) {
    I N = ceil_div(s.T, PS) * PS, slot = pt(p.t / PS) * PS + p.t % PS;
    return Expected{"kv_buffer", 0, (((p.kv * s.L + p.l) * N + slot) * s.H + p.h) * s.D + p.d};
  });
  check_everywhere("sglang-host-page-first", [](const Sizes& s, const Pos& p, const Table& pt) {
    I N = ceil_div(s.T, PS) * PS, slot = pt(p.t / PS) * PS + p.t % PS;
    return Expected{"kv_buffer", 0, (((p.kv * N + slot) * s.L + p.l) * s.H + p.h) * s.D + p.d};
  });
  check_everywhere("sglang-host-page-first-direct", [](const Sizes& s, const Pos& p, const Table& pt) {
    I P = ceil_div(s.T, PS), page = pt(p.t / PS), o = p.t % PS;
    return Expected{"kv_buffer", 0, ((((p.kv * P + page) * s.L + p.l) * PS + o) * s.H + p.h) * s.D + p.d};
  });
  check_everywhere("sglang-host-page-head", [](const Sizes& s, const Pos& p, const Table& pt) {
    I P = ceil_div(s.T, PS), page = pt(p.t / PS), o = p.t % PS;
    return Expected{"kv_buffer", 0, ((((p.kv * P + page) * s.H + p.h) * PS + o) * s.L + p.l) * s.D + p.d};
  });
}

TEST_CASE("TensorRT-LLM pool: layers inside a block, HND block interior", "[layout][engines]") {
  check_everywhere("trtllm-pool", [](const Sizes& s, const Pos& p, const Table& bt) {
    I BS = 32, b = bt(p.t / BS), o = p.t % BS;
    return Expected{"pool", 0, ((((b * s.L + p.l) * 2 + p.kv) * s.H + p.h) * BS + o) * s.D + p.d};
  });
}

TEST_CASE("HF DynamicCache and LMCache KV_2LTD: dense, no block table", "[layout][engines]") {
  check_everywhere("hf-dynamic", [](const Sizes& s, const Pos& p, const Table&) {
    return Expected{p.kv == 0 ? "key_cache" : "value_cache", p.l, (p.h * s.T + p.t) * s.D + p.d};
  });
  check_everywhere("lmcache-2ltd", [](const Sizes& s, const Pos& p, const Table&) {
    return Expected{"memory_object", 0, ((p.kv * s.L + p.l) * s.T + p.t) * s.H * s.D + p.h * s.D + p.d};
  });
}

TEST_CASE("llama.cpp: K rows per cell and V rows or with v_trans cell fastest", "[layout][engines]") {
  check_everywhere("llamacpp", [](const Sizes& s, const Pos& p, const Table& cells) {
    return Expected{p.kv == 0 ? "k" : "v", p.l, cells(p.t) * s.H * s.D + p.h * s.D + p.d};
  });
  check_everywhere("llamacpp-vtrans", [](const Sizes& s, const Pos& p, const Table& cells) {
    I kv_size = s.T;
    if (p.kv == 0) return Expected{"k", p.l, cells(p.t) * s.H * s.D + p.h * s.D + p.d};
    return Expected{"v", p.l, (p.h * s.D + p.d) * kv_size + cells(p.t)};
  });
}

TEST_CASE("Dynamo KVBM universal block: [block][head][layer][kv][token][dim]", "[layout][engines]") {
  check_everywhere("dynamo-universal", [](const Sizes& s, const Pos& p, const Table& bt) {
    I BS = 16, b = bt(p.t / BS), o = p.t % BS;
    return Expected{"blocks", 0, ((((b * s.H + p.h) * s.L + p.l) * 2 + p.kv) * BS + o) * s.D + p.d};
  });
}
