#pragma once
// SHA-256 of a file or of a text, as lowercase hex (OpenSSL's libcrypto).
#include <string>

namespace kvlayout::spec {

std::string sha256_file(const std::string& path);
std::string sha256_text(const std::string& text);

}  // namespace kvlayout::spec
