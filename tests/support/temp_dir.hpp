#pragma once
// A scratch directory removed when the test ends, for specs written inline beside the assertions on them.
#include <filesystem>
#include <string>

namespace kvlayout::test {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Writes `text` to path()/relative (creating folders) and returns the full path.
  std::string write(const std::string& relative, const std::string& text) const;

 private:
  std::filesystem::path path_;
};

}  // namespace kvlayout::test
