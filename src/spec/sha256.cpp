#include "spec/sha256.hpp"

#include <openssl/evp.h>

#include <fstream>
#include <memory>
#include <stdexcept>
#include <vector>

namespace kvlayout::spec {

namespace {

// The digest of what `feed` passes to its argument (a function taking a span of bytes), as hex.
template <typename Feed>
std::string sha256_of(Feed&& feed) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) throw std::runtime_error("SHA-256 unavailable");
  feed([&](const char* bytes, std::size_t size) { EVP_DigestUpdate(ctx.get(), bytes, size); });
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(ctx.get(), digest, &length);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out;
}

}  // namespace

std::string sha256_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return sha256_of([&](auto&& update) {
    std::vector<char> buffer(1 << 16);
    while (in) {
      in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
      update(buffer.data(), static_cast<std::size_t>(in.gcount()));
    }
  });
}

std::string sha256_text(const std::string& text) {
  return sha256_of([&](auto&& update) { update(text.data(), text.size()); });
}

}  // namespace kvlayout::spec
