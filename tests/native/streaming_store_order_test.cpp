// The streaming-store reader on assembly written by hand (each rule, and the orders it must call split),
// and KernelLibrary's keep_assembly, which leaves the assembly it reads.
#include <array>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <utility>
#include <vector>

#include "native/kernel_library.hpp"
#include "native/streaming_store_order.hpp"
#include "support/temp_dir.hpp"

using namespace kvlayout;

namespace {

// Four 32-byte streaming stores to (%rax) at the given offsets, inside one function, loads between.
std::string four_stores(int a, int b, int c, int d) {
  std::string text = "_ZN22kvlayout_generated_k176kv_avx2L5cell0Ev:\n.LFB1:\n\t.cfi_startproc\n";
  for (int offset : {a, b, c, d}) {
    text += "\tvmovdqu\t" + std::to_string(offset) + "(%rsi), %ymm0\n";
    text += "\tvmovntdq\t%ymm0, " + std::to_string(offset) + "(%rax)\n";
  }
  return text + "\tjmp\t.L7\n";
}

}  // namespace

TEST_CASE("a line's streaming stores together are not split, two lines' halves interleaved are (the control)", "[native]") {
  for (const auto& [order, split] : std::vector<std::pair<std::array<int, 4>, bool>>{
           {{0, 32, 64, 96}, false},   // in order
           {{32, 0, 96, 64}, false},   // each line's high half first: each line still whole before the next
           {{64, 96, 0, 32}, false},   // the second line first, whole
           {{32, 64, 0, 96}, true},    // GCC's order without kv_line_stored: line 0, 1, 0 again
           {{0, 64, 32, 96}, true},
           {{-64, 0, -32, 32}, true},  // negative displacements are lines below the base
       }) {
    const auto groups = native::streaming_store_groups(four_stores(order[0], order[1], order[2], order[3]));
    REQUIRE(groups.size() == 1);
    CHECK(groups[0].offsets == std::vector<std::int64_t>(order.begin(), order.end()));
    CHECK(groups[0].widths == std::vector<int>(4, 32));
    CHECK(groups[0].base == "%rax");
    CHECK(groups[0].function == "_ZN22kvlayout_generated_k176kv_avx2L5cell0Ev");
    CHECK(native::splits_lines(groups[0]) == split);
  }
}

TEST_CASE("a group ends at a label, a jump or another base, local labels keep the function, and widths come from the register", "[native]") {
  const std::string text =
      "kv_entry:\n"
      "\tvmovntdq\t%ymm0, (%rdi)\n"
      "\taddq\t$128, %rsi\n"
      "\tvmovntdq\t%ymm1, 32(%rdi)\n"     // one group with the first: address arithmetic passes
      ".L3:\n"                             // a local label ends it, and the function stays kv_entry
      "\tmovntdq\t%xmm0, 16(%rdx)\n"
      "\tmovntdq\t%xmm1, 0(%rdx)\n"
      "\tvmovntdq\t%zmm2, 64(%rcx)\n"     // another base: a group of one, dropped
      "\tmovntdq\t%xmm3, 48(%rdx)\n"
      "\tcmpq\t%rax, %rbx\n"               // any other instruction ends a group
      "\tmovntdq\t%xmm4, 32(%rdx)\n"
      "\tvmovntdq\t%zmm5, 0x40(%r8)\n"
      "\tvmovntdq\t%zmm6, (%r8)\n"
      "\tvmovntdq\t%ymm7, sym(%rip)\n"     // a symbolic displacement is no kernel's store: ends the group
      "other:\n"
      "\tvmovntps\t%ymm0, 0(%r9)\n"
      "\tvmovntps\t%ymm1, 32(%r9)\n"
      "\tret\n";
  const auto groups = native::streaming_store_groups(text);
  REQUIRE(groups.size() == 4);
  CHECK(groups[0].function == "kv_entry");
  CHECK(groups[0].offsets == std::vector<std::int64_t>{0, 32});
  CHECK(groups[1].function == "kv_entry");
  CHECK(groups[1].base == "%rdx");
  CHECK(groups[1].offsets == std::vector<std::int64_t>{16, 0});
  CHECK(groups[1].widths == std::vector<int>{16, 16});
  CHECK(groups[2].base == "%r8");
  CHECK(groups[2].offsets == std::vector<std::int64_t>{64, 0});
  CHECK(groups[2].widths == std::vector<int>{64, 64});
  CHECK_FALSE(native::splits_lines(groups[2]));  // two whole lines, one after the other
  CHECK(groups[3].function == "other");
  CHECK(groups[3].base == "%r9");
  // No streaming store at all: no group.
  CHECK(native::streaming_store_groups("f:\n\tvmovdqu\t%ymm0, (%rax)\n\tret\n").empty());
}

TEST_CASE("a function's generated kernel is read from its kvlayout_generated_ namespace", "[native]") {
  CHECK(native::generated_kernel_of("_ZN22kvlayout_generated_k176kv_avx2L5cell0Ev") == "k17");
  CHECK(native::generated_kernel_of("_ZN29kvlayout_generated_line_order8kv_avx2L9run_partEv") == "line_order");
  CHECK(native::generated_kernel_of("kvlayout_generated_k3::kv_avx2::cell0") == "k3");
  CHECK(native::generated_kernel_of("main") == "");
  CHECK(native::generated_kernel_of("k17") == "");  // the extern "C" entry is outside the namespace
}

TEST_CASE("keep_assembly compiles through kernelsI.s, which stays, and the library loads, under GCC and clang, and a broken source still fails", "[native]") {
  const std::string source = "extern \"C\" int twice(int x) { return 2 * x; }\n";
  for (const char* compiler : {"c++", "clang++"}) {
    INFO(compiler);
    test::TempDir dir;
    native::CompileOptions options;
    options.compiler = compiler;
    options.keep_assembly = true;
    options.warnings_are_errors = true;  // neither step may print a word (clang warns of arguments a step does not use)
    native::KernelLibrary library({source}, dir.path().string(), options);
    const auto assembly = dir.path() / "kernels0.s";
    REQUIRE(std::filesystem::exists(assembly));
    std::ifstream in(assembly);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(text.find("twice:") != std::string::npos);
    CHECK(library.files() == std::vector<std::string>{(dir.path() / "kernels0.so").string()});
    const auto twice = reinterpret_cast<int (*)(int)>(reinterpret_cast<void*>(library.find("twice")));
    REQUIRE(twice != nullptr);
    CHECK(twice(21) == 42);
    test::TempDir broken;
    CHECK_THROWS_AS(native::KernelLibrary({"int broken( {"}, broken.path().string(), options), native::CompileError);
  }
}
