#pragma once
// SHA-256 of a file, as lowercase hex (OpenSSL's libcrypto).
#include <string>

namespace kvlayout::certificate {

std::string sha256_file(const std::string& path);

}  // namespace kvlayout::certificate
