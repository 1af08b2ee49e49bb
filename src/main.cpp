// kvlayout: prove, or refute with a counterexample, that moving a KV cache between two engines' layouts is
// exact; then generate the relayout kernel. The commands live in the cli stage (cli/dispatch.hpp), which
// the Python package runs too.
#include <string>
#include <vector>

#include "cli/dispatch.hpp"

int main(int argc, char** argv) { return kvlayout::cli::run(std::vector<std::string>(argv + 1, argv + argc)); }
