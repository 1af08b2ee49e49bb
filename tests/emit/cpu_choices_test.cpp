// The per-CPU choices' table (emit/cpu_choices.hpp) against what is printed from it: the generated choice
// functions, compiled and called under each CPU class's default and each forced value; the test fixture
// that sets each choice; and the README's list of them.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "emit/code_writer.hpp"
#include "emit/cpu_choices.hpp"
#include "emit/kernel_fixture.hpp"
#include "native/kernel_library.hpp"
#include "support/temp_dir.hpp"

namespace kvlayout {
namespace {

using emit::ChoiceTestSwitch;
using emit::CpuChoice;

// The choices `choices`' generated functions take on this CPU and environment, bit i for choice i: the
// declarations compiled into a shared object with a probe of the kernels' C ABI that returns them.
int compiled_choices(const std::vector<CpuChoice>& choices, const test::TempDir& dir) {
  std::string source =
      "#include <atomic>\n#include <cstdint>\n#include <cstdlib>\n#include <cstring>\n"
      "#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))\n#define KV_X86_DISPATCH 1\n#else\n"
      "#define KV_X86_DISPATCH 0\n#endif\n" +
      emit::cpu_choice_declarations(choices) +
      "extern \"C\" int kv_choices(void* const*, void* const*, const int32_t* const*, const int32_t* const*, int64_t, int) {\n"
      "  int bits = 0;\n";
  for (std::size_t i = 0; i < choices.size(); ++i)
    source += "  if (kv_" + std::string(choices[i].flag) + "_wanted()) bits |= 1 << " + std::to_string(i) + ";\n";
  source += "  return bits;\n}\n";
  native::KernelLibrary library({source}, dir.path().string(), native::CompileOptions{"", {"-O0"}, 1, false});
  return library.find("kv_choices")(nullptr, nullptr, nullptr, nullptr, 0, 1);
}

// What `choices` say this CPU takes with nothing forced, bit i for choice i (kv_cpu_choice's classes).
int expected_defaults(const std::vector<CpuChoice>& choices) {
  int bits = 0;
  for (std::size_t i = 0; i < choices.size(); ++i) {
    const CpuChoice& c = choices[i];
    bool on = c.elsewhere;
#if defined(__x86_64__)
    if (__builtin_cpu_is("amd")) on = __builtin_cpu_supports("avx512f") ? c.amd_avx512 : c.amd_avx2;
    if (c.model_exception) {
      // __builtin_cpu_is takes a literal: a new model in the table needs its line here.
      REQUIRE(std::string(c.model_exception->model) == "icelake-server");
      if (__builtin_cpu_is("icelake-server")) on = c.model_exception->value;
    }
#endif
    if (on) bits |= 1 << i;
  }
  return bits;
}

// Sets every choice's variable to `value`, or unsets it (empty), until the scope ends.
class ForcedChoices {
 public:
  explicit ForcedChoices(const std::string& value) {
    for (const std::string& name : emit::cpu_choice_variables())
      if (value.empty()) unsetenv(name.c_str());
      else setenv(name.c_str(), value.c_str(), 1);
  }
  ~ForcedChoices() {
    for (const std::string& name : emit::cpu_choice_variables()) unsetenv(name.c_str());
  }
};

// The variables of cpu_choices() that `text` does not name as `NAME=on|off`.
std::vector<std::string> variables_missing_from(const std::string& text) {
  std::vector<std::string> missing;
  for (const std::string& name : emit::cpu_choice_variables())
    if (text.find("`" + name + "=on|off`") == std::string::npos) missing.push_back(name);
  return missing;
}

}  // namespace

TEST_CASE("the per-CPU choices: one atomic each, one test switch per variable, one store each per call", "[emit][cpu_choices]") {
  const std::vector<CpuChoice>& choices = emit::cpu_choices();
  REQUIRE(choices.size() < 31);  // compiled_choices' bits
  std::set<std::string> flags;
  for (const CpuChoice& c : choices) {
    CHECK(flags.insert(c.flag).second);
    CHECK(emit::test_switch_of(c.variable) == c.test_switch);
  }
  const std::string declarations = emit::cpu_choice_declarations();
  emit::CodeWriter w;
  emit::print_choice_stores(w);
  for (const CpuChoice& c : choices) {
    const std::string flag = std::string("kv_") + c.flag;
    CHECK(declarations.find("static std::atomic<bool> " + flag + "{") != std::string::npos);
    CHECK(declarations.find("static inline bool " + flag + "_wanted()") != std::string::npos);
    CHECK(w.str().find(flag + ".store(" + flag + "_wanted(), ") != std::string::npos);
  }
  CHECK_THROWS_AS(emit::test_switch_of("KVLAYOUT_NOT_A_CHOICE"), std::logic_error);
}

TEST_CASE("the printer reads a choice only through the table: a flag it does not declare is refused", "[emit][cpu_choices]") {
  // What a kernel reads (cpu_choice_load) is the atomic the table declares, for every flag.
  const std::string declarations = emit::cpu_choice_declarations();
  for (const CpuChoice& c : emit::cpu_choices()) {
    const std::string load = emit::cpu_choice_load(c.flag);
    CHECK(load == std::string("kv_") + c.flag + ".load(std::memory_order_relaxed)");
    CHECK(declarations.find("static std::atomic<bool> kv_" + std::string(c.flag) + "{") != std::string::npos);
  }
  // Controls: a flag the table lacks, and the atomic's name in place of the flag, are refused.
  CHECK_THROWS_AS(emit::cpu_choice_load("not_a_choice"), std::logic_error);
  CHECK_THROWS_AS(emit::cpu_choice_load("kv_block_passes"), std::logic_error);
}

TEST_CASE("the generated choice functions take the table's class on this CPU and each forced value", "[emit][cpu_choices]") {
  const std::vector<CpuChoice>& choices = emit::cpu_choices();
  const int all = (1 << choices.size()) - 1;
  test::TempDir dir;
  {
    ForcedChoices unset("");
    CHECK(compiled_choices(choices, dir) == expected_defaults(choices));
  }
  {
    ForcedChoices on("on");
    CHECK(compiled_choices(choices, dir) == all);
  }
  {
    ForcedChoices off("off");
    CHECK(compiled_choices(choices, dir) == 0);
  }
  SECTION("control: a table with one choice's every class flipped is told apart") {
    std::vector<CpuChoice> flipped = choices;
    CpuChoice& first = flipped.front();
    first.amd_avx2 = !first.amd_avx2, first.amd_avx512 = !first.amd_avx512, first.elsewhere = !first.elsewhere;
    REQUIRE(!first.model_exception);
    ForcedChoices unset("");
    CHECK(compiled_choices(flipped, dir) != expected_defaults(choices));
    CHECK(compiled_choices(flipped, dir) == expected_defaults(flipped));
  }
}

TEST_CASE("the test fixture sets every per-CPU choice by its switch and clears it after", "[emit][cpu_choices]") {
  auto value = [](const std::string& name) {
    const char* v = std::getenv(name.c_str());
    return v == nullptr ? std::string("unset") : std::string(v);
  };
  for (const bool staged : {false, true})
    for (const bool second_orders : {false, true})
      for (const bool blocks_at_once : {false, true}) {
        {
          test::ScopedIsa isa("baseline", staged, second_orders, blocks_at_once);
          for (const CpuChoice& c : emit::cpu_choices()) {
            bool on = true;
            switch (c.test_switch) {
              case ChoiceTestSwitch::prefetches: on = true; break;
              case ChoiceTestSwitch::staged: on = staged; break;
              case ChoiceTestSwitch::second_orders: on = second_orders; break;
              case ChoiceTestSwitch::blocks_at_once: on = blocks_at_once; break;
            }
            INFO(c.variable);
            CHECK(value(c.variable) == (on ? "on" : "off"));
          }
        }
        for (const std::string& name : emit::cpu_choice_variables()) CHECK(value(name) == "unset");
      }
  test::ScopedIsa avx2("avx2");
  for (const CpuChoice& c : emit::cpu_choices())
    if (c.test_switch == ChoiceTestSwitch::prefetches) CHECK(value(c.variable) == "off");
}

TEST_CASE("the README names every per-CPU choice's variable", "[emit][cpu_choices]") {
  std::ifstream in(std::string(KVLAYOUT_SOURCE_DIR) + "/README.md");
  REQUIRE(in.good());
  std::stringstream readme;
  readme << in.rdbuf();
  CHECK(variables_missing_from(readme.str()).empty());
  SECTION("control: a README without one of them is caught") {
    std::string text = readme.str();
    const std::string gone = "`" + emit::cpu_choice_variables().back() + "=on|off`";
    for (std::size_t at = text.find(gone); at != std::string::npos; at = text.find(gone)) text.erase(at, gone.size());
    CHECK(variables_missing_from(text) == std::vector<std::string>{emit::cpu_choice_variables().back()});
  }
}

}  // namespace kvlayout
