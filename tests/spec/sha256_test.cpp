// SHA-256 of files and texts (OpenSSL's libcrypto), against FIPS 180-2's test vector.
#include <catch2/catch.hpp>

#include "spec/sha256.hpp"
#include "support/temp_dir.hpp"

namespace kvlayout {

TEST_CASE("sha256 of a text and of a file holding it agree with the standard's vector", "[spec][sha256]") {
  const std::string abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
  CHECK(spec::sha256_text("abc") == abc);
  test::TempDir dir;
  CHECK(spec::sha256_file(dir.write("abc.txt", "abc")) == abc);
  CHECK(spec::sha256_text("abd") != abc);  // control: one byte apart
  CHECK_THROWS(spec::sha256_file((dir.path() / "missing").string()));
}

}  // namespace kvlayout
