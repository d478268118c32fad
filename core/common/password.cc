#include "password.h"

#include <sodium.h>

#include <mutex>

namespace lcc {
namespace {
void ensureSodium() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (sodium_init() < 0) std::abort();  // no usable random source: nothing is safe
  });
}
}  // namespace

Result<HashCost> parseHashCost(std::string_view text) {
  if (text == "interactive") return HashCost::kInteractive;
  if (text == "moderate") return HashCost::kModerate;
  return Status::invalidArgument("must be interactive or moderate (got " + std::string(text) + ")");
}

Result<std::string> hashPassword(std::string_view password, HashCost cost) {
  ensureSodium();
  char out[crypto_pwhash_STRBYTES];
  unsigned long long ops = cost == HashCost::kModerate ? crypto_pwhash_OPSLIMIT_MODERATE : crypto_pwhash_OPSLIMIT_INTERACTIVE;
  size_t mem = cost == HashCost::kModerate ? crypto_pwhash_MEMLIMIT_MODERATE : crypto_pwhash_MEMLIMIT_INTERACTIVE;
  if (crypto_pwhash_str(out, password.data(), password.size(), ops, mem) != 0) {
    return Status::internal("password hashing ran out of memory");
  }
  return std::string(out);
}

bool verifyPassword(std::string_view hash, std::string_view password) {
  ensureSodium();
  std::string h(hash);  // must be NUL-terminated
  return crypto_pwhash_str_verify(h.c_str(), password.data(), password.size()) == 0;
}

std::string generatePassword(std::size_t length) {
  ensureSodium();
  static const char kAlphabet[] = "abcdefghjkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
  std::string out;
  for (std::size_t i = 0; i < length; ++i) out.push_back(kAlphabet[randombytes_uniform(sizeof(kAlphabet) - 1)]);
  return out;
}

std::string randomHex(std::size_t bytes) {
  ensureSodium();
  std::string raw(bytes, '\0');
  randombytes_buf(raw.data(), bytes);
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : raw) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

}  // namespace lcc
