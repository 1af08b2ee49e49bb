#include "spec/error.hpp"

namespace kvlayout::spec {
namespace {
std::string compose(const std::string& file, const std::string& path, const std::string& found,
                    const std::string& expected) {
  std::string where = file;
  if (!path.empty()) where += (where.empty() ? "" : ": ") + path;
  std::string s = where.empty() ? "" : where + ": ";
  s += "found " + found;
  if (!expected.empty()) s += "; expected " + expected;
  return s;
}
}  // namespace

SpecError::SpecError(std::string f, std::string p, std::string fo, std::string ex)
    : std::runtime_error(compose(f, p, fo, ex)),
      file(std::move(f)), path(std::move(p)), found(std::move(fo)), expected(std::move(ex)) {}

}  // namespace kvlayout::spec
