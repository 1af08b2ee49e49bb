#include "fuzz_support.hpp"

#include <cxxabi.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string_view>
#include <typeinfo>

namespace kvlayout::fuzz {
namespace {

namespace fs = std::filesystem;

const fs::path& temp_dir();

void remove_temp_dir() {
  std::error_code ec;
  fs::remove_all(temp_dir(), ec);
}

// One directory per process: libFuzzer's -jobs/-fork run several processes side by side. Removed at exit
// and before fail() aborts (libFuzzer saves a crashing input from memory, not from this file).
const fs::path& temp_dir() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("kvlayout-fuzz-" + std::to_string(getpid()));
    fs::create_directories(d);
    std::atexit(remove_temp_dir);
    return d;
  }();
  return dir;
}

// The first "name": "..." in the text, if it is a plain file name; the loader decides whether it is the
// declaration's own name (a later tensor's name only costs a SpecError).
std::string stem_of(std::string_view text) {
  std::size_t key = text.find("\"name\"");
  if (key == std::string_view::npos) return "input";
  std::size_t i = key + 6;
  while (i < text.size() && (text[i] == ' ' || text[i] == '\n' || text[i] == '\t' || text[i] == '\r')) ++i;
  if (i >= text.size() || text[i] != ':') return "input";
  ++i;
  while (i < text.size() && (text[i] == ' ' || text[i] == '\n' || text[i] == '\t' || text[i] == '\r')) ++i;
  if (i >= text.size() || text[i] != '"') return "input";
  std::size_t end = text.find('"', i + 1);
  if (end == std::string_view::npos) return "input";
  std::string_view name = text.substr(i + 1, end - i - 1);
  if (name.empty() || name.size() > 100 || name.front() == '.') return "input";
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) return "input";
  return std::string(name);
}

std::string type_name(const std::exception& e) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(abi::__cxa_demangle(typeid(e).name(), nullptr, nullptr, &status),
                                                    std::free);
  return status == 0 && demangled ? demangled.get() : typeid(e).name();
}

}  // namespace

void fail(const char* stage, const std::string& what) {
  std::fprintf(stderr, "\n==kvlayout-fuzz== %s: %s\n", stage, what.c_str());
  std::fflush(stderr);
  remove_temp_dir();
  std::abort();
}

void fail(const char* stage, const std::exception& e) {
  fail(stage, type_name(e) + ": " + e.what() + " (not a SpecError: the CLI would exit 4)");
}

std::string write_input(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  fs::path file = temp_dir() / (stem_of(text) + ".json");
  std::ofstream(file, std::ios::binary).write(text.data(), static_cast<std::streamsize>(text.size()));
  return file.string();
}

void remove_input(const std::string& path) {
  std::error_code ec;
  fs::remove(path, ec);
}

}  // namespace kvlayout::fuzz
