#include "md5.h"

#include <openssl/evp.h>

namespace lcc {

struct Md5::Impl {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  ~Impl() { EVP_MD_CTX_free(ctx); }
  void reset() { EVP_DigestInit_ex(ctx, EVP_md5(), nullptr); }
};

Md5::Md5() : impl_(new Impl) { impl_->reset(); }
Md5::~Md5() = default;

void Md5::update(std::string_view bytes) { EVP_DigestUpdate(impl_->ctx, bytes.data(), bytes.size()); }

std::string Md5::hexDigest() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(impl_->ctx, digest, &len);
  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(len * 2);
  for (unsigned i = 0; i < len; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 15]);
  }
  impl_->reset();
  return out;
}

std::string Md5::of(std::string_view bytes) {
  Md5 m;
  m.update(bytes);
  return m.hexDigest();
}

bool isMd5Hex(std::string_view s) {
  if (s.size() != 32) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace lcc
