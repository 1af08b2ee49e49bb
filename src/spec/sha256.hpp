#pragma once
// SHA-256 of a file, as lowercase hex (OpenSSL's libcrypto).
#include <string>

namespace kvlayout::spec {

std::string sha256_file(const std::string& path);

}  // namespace kvlayout::spec
