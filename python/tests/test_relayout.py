"""Relayout: the round trip vLLM -> SGLang checked element by element against independent formulas, the
on-disk kernel cache, refusals, argument checks and the kernel's own error codes."""
import shutil

import numpy as np
import pytest

import kvlayout

LAYERS, HEADS, HEAD_SIZE, TOKENS, BLOCK = 2, 4, 16, 67, 16
BLOCKS = 5  # ceil(67 / 16)


def pattern(layer, kv, token, head, dim):
    """A distinct non-zero 16-bit value per logical position (2*2*67*4*16 = 17152 positions)."""
    return ((((layer * 2 + kv) * TOKENS + token) * HEADS + head) * HEAD_SIZE + dim) + 1


def coords():
    return np.meshgrid(np.arange(TOKENS), np.arange(HEADS), np.arange(HEAD_SIZE), indexing="ij")


def vllm_source(block_table):
    """vLLM FlashAttention NHD per layer: (2, num_blocks, block_size, heads, head_size), filled by formula."""
    caches = [np.zeros((2, BLOCKS, BLOCK, HEADS, HEAD_SIZE), dtype=np.uint16) for _ in range(LAYERS)]
    token, head, dim = coords()
    for layer in range(LAYERS):
        for kv in range(2):
            caches[layer][kv, block_table[token // BLOCK], token % BLOCK, head, dim] = pattern(layer, kv, token, head, dim)
    return caches


def sglang_expected(page_table, num_tokens):
    """SGLang MHATokenToKVPool (page_size 1): k_buffer[l] / v_buffer[l] rows (size + 1); token t in row
    page_table[t]; row 0 is the dummy slot and stays untouched, as do tokens >= num_tokens."""
    k = [np.zeros((TOKENS + 1, HEADS, HEAD_SIZE), dtype=np.uint16) for _ in range(LAYERS)]
    v = [np.zeros((TOKENS + 1, HEADS, HEAD_SIZE), dtype=np.uint16) for _ in range(LAYERS)]
    token, head, dim = coords()
    moved = token < num_tokens
    for layer in range(LAYERS):
        for kv, buffers in ((0, k), (1, v)):
            buffers[layer][page_table[token[moved]], head[moved], dim[moved]] = pattern(layer, kv, token, head, dim)[moved]
    return k + v


@pytest.fixture(scope="module")
def move():
    return kvlayout.Relayout("vllm-flash-nhd", "sglang-mha", "small")


def tables(seed):
    rng = np.random.default_rng(seed)
    return rng.permutation(BLOCKS).astype(np.int32), (rng.permutation(TOKENS) + 1).astype(np.int32)


@pytest.mark.parametrize("num_tokens,threads", [(TOKENS, 1), (TOKENS, 3), (40, 2), (0, 1)])
def test_vllm_to_sglang_moves_every_element_where_the_formulas_say(move, num_tokens, threads):
    block_table, page_table = tables(num_tokens + threads)
    src = vllm_source(block_table)
    dst = [np.zeros((TOKENS + 1, HEADS, HEAD_SIZE), dtype=np.uint16) for _ in range(2 * LAYERS)]
    move(src, dst, [block_table], [page_table], num_tokens, threads=threads)
    for got, want in zip(dst, sglang_expected(page_table, num_tokens)):
        np.testing.assert_array_equal(got, want)


def test_the_kernel_is_cached_on_disk_and_loaded_without_proving(move):
    again = kvlayout.Relayout("vllm-flash-nhd", "sglang-mha", "small")
    assert again.cached and again.key == move.key and again.proof.grade == move.proof.grade
    block_table, page_table = tables(7)
    dst = [np.zeros((TOKENS + 1, HEADS, HEAD_SIZE), dtype=np.uint16) for _ in range(2 * LAYERS)]
    again(vllm_source(block_table), dst, [block_table], [page_table], TOKENS)
    for got, want in zip(dst, sglang_expected(page_table, TOKENS)):
        np.testing.assert_array_equal(got, want)
    # A different parameter is a different kernel.
    other = kvlayout.Relayout("vllm-flash-nhd", "sglang-mha", "small", params={"num_tokens": 32})
    assert other.key != move.key and other.max_tokens == 32


def test_a_pair_that_is_not_exact_is_refused_with_its_grade_and_counterexample():
    with pytest.raises(kvlayout.Refused) as e:
        kvlayout.Relayout("vllm-flash-nhd", "broken-collide", "small")
    assert e.value.grade == "REFUSED" and e.value.reason["code"] == "collision"
    assert len(e.value.counterexample["positions"]) == 2
    with pytest.raises(kvlayout.Refused) as e:
        kvlayout.Relayout("vllm-flash-nhd", "vllm-mla", "small")
    assert e.value.unblocked_by


def test_arguments_are_checked_before_the_kernel_runs(move):
    block_table, page_table = tables(1)
    src = vllm_source(block_table)
    dst = [np.zeros((TOKENS + 1, HEADS, HEAD_SIZE), dtype=np.uint16) for _ in range(2 * LAYERS)]
    cases = {
        "src_buffers": lambda: move(src[:1], dst, [block_table], [page_table], TOKENS),
        "dst_buffers[3]": lambda: move(src, dst[:3] + [np.zeros((TOKENS, HEADS, HEAD_SIZE), np.uint16)], [block_table], [page_table], TOKENS),
        "dst_buffers[0]": lambda: move(src, [d.astype(np.float16) for d in dst], [block_table], [page_table], TOKENS),
        "src_buffers[1]": lambda: move([src[0], np.asfortranarray(src[1])], dst, [block_table], [page_table], TOKENS),
        "src_tables[0]": lambda: move(src, dst, [block_table.astype(np.int64)], [page_table], TOKENS),
        "dst_tables[0]": lambda: move(src, dst, [block_table], [page_table[:10]], TOKENS),
        "num_tokens": lambda: move(src, dst, [block_table], [page_table], TOKENS + 1),
        "threads": lambda: move(src, dst, [block_table], [page_table], TOKENS, threads=0),
    }
    for path, call in cases.items():
        with pytest.raises(kvlayout.ArgumentError) as e:
            call()
        assert e.value.path == path, (path, str(e.value))
    assert all(not d.any() for d in dst)  # nothing ran
    # int16 is not a raw container of bf16 (only its own type or uint16 is; see kvlayout check --tensors).
    with pytest.raises(kvlayout.ArgumentError):
        move([s.view(np.int16) for s in src], dst, [block_table], [page_table], TOKENS)


def test_the_kernel_refuses_bad_tables_and_writes_nothing(move):
    block_table, page_table = tables(2)
    src = vllm_source(block_table)
    dst = [np.zeros((TOKENS + 1, HEADS, HEAD_SIZE), dtype=np.uint16) for _ in range(2 * LAYERS)]
    repeated = page_table.copy()
    repeated[5] = repeated[6]
    with pytest.raises(kvlayout.KernelError) as e:
        move(src, dst, [block_table], [repeated], TOKENS)
    assert e.value.code == 5
    out_of_range = block_table.copy()
    out_of_range[0] = BLOCKS
    with pytest.raises(kvlayout.KernelError) as e:
        move(src, dst, [out_of_range], [page_table], TOKENS)
    assert e.value.code == 2 and "outside its range" in e.value.meaning
    assert all(not d.any() for d in dst)


def test_new_buffers_have_the_sizes_the_abi_asks_for(move):
    src, dst = move.new_buffers("source"), move.new_buffers("destination")
    assert [b.nbytes for b in src] == [b["bytes"] for b in move.abi["source"]["buffers"]]
    block_table, page_table = tables(3)
    move(src, dst, [block_table], [page_table], TOKENS)  # flat arrays of the right size are accepted


def test_torch_tensors_in_bfloat16():
    torch = pytest.importorskip("torch", reason="torch is not installed; numpy covers the CPU path")
    move = kvlayout.Relayout("vllm-flash-nhd", "sglang-mha", "small")
    block_table, page_table = tables(4)
    src = [torch.from_numpy(a.copy()).view(torch.bfloat16) for a in vllm_source(block_table)]
    dst = [torch.zeros((TOKENS + 1, HEADS, HEAD_SIZE), dtype=torch.bfloat16) for _ in range(2 * LAYERS)]
    move(src, dst, [torch.from_numpy(block_table)], [torch.from_numpy(page_table)], TOKENS, threads=2)
    for got, want in zip(dst, sglang_expected(page_table, TOKENS)):
        np.testing.assert_array_equal(got.view(torch.int16).numpy().view(np.uint16), want)
    with pytest.raises(kvlayout.ArgumentError):  # float16 is not bf16
        move([s.view(torch.float16) for s in src], dst, [torch.from_numpy(block_table)], [torch.from_numpy(page_table)], TOKENS)


def test_cuda_tensors_on_a_gpu():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no GPU")
    move = kvlayout.Relayout("vllm-flash-nhd", "sglang-mha", "small", device="cuda")
    block_table, page_table = tables(5)
    src = [torch.from_numpy(a).cuda() for a in vllm_source(block_table)]
    dst = [torch.zeros((TOKENS + 1, HEADS, HEAD_SIZE), dtype=torch.int16, device="cuda") for _ in range(2 * LAYERS)]
    move(src, [d.view(torch.uint16) if hasattr(torch, "uint16") else d for d in dst],
         [torch.from_numpy(block_table).cuda()], [torch.from_numpy(page_table).cuda()], TOKENS)
    for got, want in zip(dst, sglang_expected(page_table, TOKENS)):
        np.testing.assert_array_equal(got.cpu().numpy().view(np.uint16), want)


def test_a_cuda_relayout_compiles_with_nvcc_and_refuses_host_arrays():
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    move = kvlayout.Relayout("vllm-flash-nhd", "sglang-mha", "small", device="cuda")
    assert move.device == "cuda" and move.abi["target"] == "cuda"
    block_table, page_table = tables(6)
    dst = [np.zeros((TOKENS + 1, HEADS, HEAD_SIZE), dtype=np.uint16) for _ in range(2 * LAYERS)]
    with pytest.raises(kvlayout.ArgumentError) as e:
        move(vllm_source(block_table), dst, [block_table], [page_table], TOKENS)
    assert "cuda" in e.value.expected
