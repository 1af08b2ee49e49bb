#pragma once
// The per-CPU choices of an emitted CPU kernel. Each is an on/off that a kernel takes at every call from the
// CPU it runs on (kv_cpu_choice's classes: AMD without AVX-512, AMD with it, any other CPU), unless the
// environment forces it, because it measured faster one way on one class and the other way on another.
// This table is their one home: the generated kernel's choice functions and atomics, kv_run_part's
// per-call stores, the test fixture that runs every kernel each way against the byte oracle
// (tests/emit/kernel_fixture.hpp, ScopedIsa) and the sweep's record of forced choices are all printed from
// it, so a new choice cannot be declared and left out of the tests. The README's list names each variable
// (a test checks it does).
#include <optional>
#include <string>
#include <vector>

#include "emit/code_writer.hpp"

namespace kvlayout::emit {

// Which of the test fixture's switches sets a choice in a test run (ScopedIsa's arguments).
enum class ChoiceTestSwitch {
  prefetches,      // on for the baseline variant, off for AVX2: a prefetch changes no byte, but its
                   // address arithmetic is emitted code too
  staged,          // staged bursts, rows and boxes: `staged`
  second_orders,   // a nest's second loop order or block order: `second_orders`
  blocks_at_once,  // whole blocks four at a time: `blocks_at_once`
};

// A CPU model (a __builtin_cpu_is name) on which a choice takes `value` whatever its class says.
struct ModelException {
  const char* model;
  bool value;
};

struct CpuChoice {
  const char* flag;      // the kernel's atomic kv_<flag>, set at each call from kv_<flag>_wanted()
  const char* variable;  // the environment variable that forces it ("on" or "off"); two flags may share one
  bool amd_avx2;         // the choice on AMD CPUs without AVX-512 F
  bool amd_avx512;       // on AMD CPUs with it
  bool elsewhere;        // on any other CPU, and off x86; also the atomic's value before a call sets it
  std::optional<ModelException> model_exception = std::nullopt;
  ChoiceTestSwitch test_switch;
  const char* read_by;  // what in the kernel reads the atomic
  const char* why;      // what it chooses and what was measured on each class: the declaration's comment
};

// @post every flag is distinct; flags that share a variable share its test switch (choice_test.cpp).
const std::vector<CpuChoice>& cpu_choices();

// The environment variables of cpu_choices(), each once, in the table's order.
std::vector<std::string> cpu_choice_variables();

// The test switch that sets `variable`. @pre `variable` is one of cpu_choice_variables().
ChoiceTestSwitch test_switch_of(const std::string& variable);

// The generated kernel's choice machinery, for its prologue: kv_forced_choice and kv_cpu_choice, then for
// each choice its comment, kv_<flag>_wanted() and the atomic kv_<flag>. Of `choices` where given (the
// tests' control: a table with one class flipped), else of cpu_choices().
std::string cpu_choice_declarations();
std::string cpu_choice_declarations(const std::vector<CpuChoice>& choices);

// The generated kernel's read of choice `flag`'s atomic: "kv_<flag>.load(std::memory_order_relaxed)". What the
// printer writes wherever a kernel takes a choice, so that a flag the table does not declare cannot be
// printed into a kernel (which would then read an undeclared atomic). @pre `flag` is a flag of
// cpu_choices(); else std::logic_error.
std::string cpu_choice_load(const std::string& flag);

// kv_run_part's stores, one a choice: kv_<flag>.store(kv_<flag>_wanted(), ...), made before a call's
// threads start.
void print_choice_stores(CodeWriter& w);
void print_choice_stores(CodeWriter& w, const std::vector<CpuChoice>& choices);

}  // namespace kvlayout::emit
