#include "common/password.h"

#include <sodium.h>
#include <sys/stat.h>

#include <algorithm>
#include <mutex>

namespace lcc {
namespace {

constexpr std::string_view kTokenPrefix = "$lcc-b2k$1$";
constexpr std::string_view kArgonPrefix = "$argon2id$";
constexpr char kAlphabet[] = "abcdefghjkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
constexpr std::size_t kSaltBytes = 16;
constexpr std::size_t kTagBytes = 32;

void ensureSodium() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (sodium_init() < 0) std::abort();  // no usable random source: nothing is safe
  });
}

std::string toHex(const std::uint8_t* p, std::size_t n) {
  std::string out(n * 2 + 1, '\0');
  sodium_bin2hex(out.data(), out.size(), p, n);
  out.pop_back();
  return out;
}

bool fromHex(std::string_view hex, std::uint8_t* out, std::size_t n) {
  std::size_t got = 0;
  return hex.size() == n * 2 &&
         sodium_hex2bin(out, n, hex.data(), hex.size(), nullptr, &got, nullptr) == 0 && got == n;
}

void tokenTag(const AuthKey& key, const std::uint8_t* salt, std::string_view token, std::uint8_t* tag) {
  crypto_generichash_state st;
  crypto_generichash_init(&st, key.data(), key.size(), kTagBytes);
  crypto_generichash_update(&st, salt, kSaltBytes);
  crypto_generichash_update(&st, reinterpret_cast<const unsigned char*>(token.data()), token.size());
  crypto_generichash_final(&st, tag, kTagBytes);
}

bool verifyToken(const AuthKey& key, std::string_view hash, std::string_view token) {
  std::string_view rest = hash.substr(kTokenPrefix.size());
  auto dollar = rest.find('$');
  if (dollar == std::string_view::npos) return false;
  std::uint8_t salt[kSaltBytes], want[kTagBytes], got[kTagBytes];
  if (!fromHex(rest.substr(0, dollar), salt, kSaltBytes) || !fromHex(rest.substr(dollar + 1), want, kTagBytes)) {
    return false;
  }
  tokenTag(key, salt, token, got);
  return sodium_memcmp(want, got, kTagBytes) == 0;
}

}  // namespace

Result<HashCost> parseHashCost(std::string_view text) {
  if (text == "interactive") return HashCost::kInteractive;
  if (text == "moderate") return HashCost::kModerate;
  return Status::invalidArgument("must be interactive or moderate (got " + std::string(text) + ")");
}

Result<std::unique_ptr<PasswordHasher>> PasswordHasher::open(Env& env, const std::string& path, HashCost cost) {
  ensureSodium();
  AuthKey key{};
  if (env.exists(path)) {
    struct stat st;
    if (::stat(path.c_str(), &st) == 0 && (st.st_mode & 077) != 0) {
      return Status::invalidArgument(path + ": refused: the password key must be readable by its owner only (chmod 600)");
    }
    LCC_ASSIGN_OR_RETURN(std::string hex, env.readFile(path));
    while (!hex.empty() && (hex.back() == '\n' || hex.back() == '\r')) hex.pop_back();
    if (!fromHex(hex, key.data(), key.size())) {
      return Status::corruption(path + ": not a password key (64 hex digits expected)");
    }
  } else {
    randombytes_buf(key.data(), key.size());
    mode_t old = ::umask(077);
    Status s = env.writeFileAtomic(path, toHex(key.data(), key.size()) + "\n");
    ::umask(old);
    LCC_RETURN_IF_ERROR(s);
    ::chmod(path.c_str(), 0600);
  }
  return std::make_unique<PasswordHasher>(key, cost);
}

std::shared_ptr<const PasswordHasher> PasswordHasher::ephemeral(HashCost cost) {
  ensureSodium();
  AuthKey key{};
  randombytes_buf(key.data(), key.size());
  return std::make_shared<PasswordHasher>(key, cost);
}

std::string PasswordHasher::hashToken(std::string_view token) const {
  ensureSodium();
  std::uint8_t salt[kSaltBytes], tag[kTagBytes];
  randombytes_buf(salt, sizeof salt);
  tokenTag(key_, salt, token, tag);
  return std::string(kTokenPrefix) + toHex(salt, kSaltBytes) + "$" + toHex(tag, kTagBytes);
}

std::string PasswordHasher::keyId() const {
  ensureSodium();
  static constexpr std::string_view kWhat = "lcc auth.key id 1";
  std::uint8_t tag[8];
  crypto_generichash(tag, sizeof tag, reinterpret_cast<const unsigned char*>(kWhat.data()), kWhat.size(), key_.data(),
                     key_.size());
  return toHex(tag, sizeof tag);
}

bool PasswordHasher::isKeyed(std::string_view hash) { return hash.substr(0, kTokenPrefix.size()) == kTokenPrefix; }

bool PasswordHasher::looksLikeHash(std::string_view hash) {
  if (hash.size() > 512) return false;
  for (unsigned char c : hash) {
    if (c <= 0x20 || c >= 0x7f) return false;
  }
  if (isKeyed(hash)) return hash.size() == kTokenPrefix.size() + 2 * kSaltBytes + 1 + 2 * kTagBytes;
  return hash.substr(0, kArgonPrefix.size()) == kArgonPrefix;
}

Result<std::string> PasswordHasher::hashChosen(std::string_view password) const {
  ensureSodium();
  char out[crypto_pwhash_STRBYTES];
  const bool moderate = cost_ == HashCost::kModerate;
  unsigned long long ops = moderate ? crypto_pwhash_OPSLIMIT_MODERATE : crypto_pwhash_OPSLIMIT_INTERACTIVE;
  size_t mem = moderate ? crypto_pwhash_MEMLIMIT_MODERATE : crypto_pwhash_MEMLIMIT_INTERACTIVE;
  if (crypto_pwhash_str(out, password.data(), password.size(), ops, mem) != 0) {
    return Status::internal("password hashing ran out of memory");
  }
  return std::string(out);
}

PasswordHasher::Verdict PasswordHasher::verify(std::string_view hash, std::string_view password) const {
  ensureSodium();
  Verdict v;
  if (hash.substr(0, kTokenPrefix.size()) == kTokenPrefix) {
    v.ok = verifyToken(key_, hash, password);
    return v;
  }
  if (hash.substr(0, kArgonPrefix.size()) != kArgonPrefix) return v;  // unknown kind: never matches
  v.slow = true;
  std::string h(hash);  // must be NUL-terminated
  v.ok = crypto_pwhash_str_verify(h.c_str(), password.data(), password.size()) == 0;
  v.upgrade = v.ok && looksGenerated(password);
  return v;
}

void PasswordHasher::verifyNothing(std::string_view password) const {
  static const std::string kDummy = hashToken(generateToken());
  (void)verifyToken(key_, kDummy, password);
}

std::string PasswordHasher::generateToken() {
  ensureSodium();
  std::string out;
  for (std::size_t i = 0; i < kTokenLength; ++i) out.push_back(kAlphabet[randombytes_uniform(sizeof(kAlphabet) - 1)]);
  return out;
}

bool PasswordHasher::looksGenerated(std::string_view password) {
  // 20 characters of 55 are 115.6 bits, the tokens of earlier versions; a person who
  // typed such a string chose one as strong, and loses nothing by the fast hash.
  if (password.size() < 20 || password.size() > 64) return false;
  std::string_view alphabet(kAlphabet, sizeof(kAlphabet) - 1);
  if (!std::all_of(password.begin(), password.end(), [&](char c) { return alphabet.find(c) != std::string_view::npos; })) {
    return false;
  }
  // Reject the obviously typed: a random 20-character draw from 55 has, with
  // overwhelming likelihood, at least 12 distinct characters.
  std::string sorted(password);
  std::sort(sorted.begin(), sorted.end());
  return static_cast<std::size_t>(std::unique(sorted.begin(), sorted.end()) - sorted.begin()) >= 12;
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
