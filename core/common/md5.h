// md5.h — incremental MD5 (OpenSSL EVP), lower-case hex out.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace lcc {

class Md5 {
 public:
  Md5();
  ~Md5();
  Md5(const Md5&) = delete;
  Md5& operator=(const Md5&) = delete;

  void update(std::string_view bytes);
  // 32 lower-case hex digits; the object is reset afterwards.
  std::string hexDigest();

  static std::string of(std::string_view bytes);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

bool isMd5Hex(std::string_view s);

}  // namespace lcc
