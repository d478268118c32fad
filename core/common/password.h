// password.h — provider passwords: never stored, only hashed (docs/security.md,
// "Provider passwords").
//
// Two kinds of secret, two hashes, one string format each:
//  - A token the LCC generated (`generateToken()`, 127 bits from the OS's random
//    source) cannot be guessed, so a slow hash buys nothing: it is stored as a keyed
//    BLAKE2b-256 of a salt and the token, under a server key that lives in the data
//    folder and never in the provider store:
//        $lcc-b2k$1$<salt: 32 hex>$<tag: 64 hex>
//    A check costs about a microsecond.
//  - A password a person chose (`lcc provider add --password`) may be guessable, so it
//    keeps libsodium's Argon2id ($argon2id$…), slow by design.
// `verify()` reads either. A successful check of an Argon2id hash whose password has
// the shape of a generated token reports `upgrade`: the caller stores `hashToken()`
// of it instead, so hashes made before the fast kind existed become fast at the
// provider's next login.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "lcc/env.h"
#include "lcc/status.h"

namespace lcc {

enum class HashCost { kInteractive, kModerate };

// Parses "interactive" / "moderate" (config key uns.password_hash_ops).
Result<HashCost> parseHashCost(std::string_view text);

using AuthKey = std::array<std::uint8_t, 32>;

class PasswordHasher {
 public:
  struct Verdict {
    bool ok = false;
    bool upgrade = false;  // ok, and the hash should be replaced by hashToken(password)
    bool slow = false;     // the hash was Argon2id
  };

  PasswordHasher(const AuthKey& key, HashCost cost) : key_(key), cost_(cost) {}

  // Reads the server key from `path`, or creates it (32 random bytes, mode 0600,
  // written atomically) when there is none. A key readable by others is refused.
  static Result<std::unique_ptr<PasswordHasher>> open(Env& env, const std::string& path, HashCost cost);

  // A hasher with a random key that lives as long as the process (tests, and tools
  // that check nothing across restarts).
  static std::shared_ptr<const PasswordHasher> ephemeral(HashCost cost = HashCost::kInteractive);

  std::string hashToken(std::string_view token) const;
  Result<std::string> hashChosen(std::string_view password) const;
  Verdict verify(std::string_view hash, std::string_view password) const;
  // Verifies against a hash of the kind most providers have, with nothing to find:
  // spends the time of a real check for an id that does not exist.
  void verifyNothing(std::string_view password) const;

  // A name of the server key that reveals nothing of it (a keyed BLAKE2b of a fixed
  // text, 16 hex): two nodes with the same key_id check each other's token hashes
  // (a provider moved between sub-LCCs keeps its hash, core/front).
  std::string keyId() const;
  // True when `hash` has the form of one of the two kinds (not whether it is right).
  static bool looksLikeHash(std::string_view hash);
  // True when `hash` is of the keyed kind ($lcc-b2k$): it verifies only under its key.
  static bool isKeyed(std::string_view hash);

  // A token of kTokenLength characters from an alphabet without look-alikes (127 bits).
  static std::string generateToken();
  // True when `password` could have come from generateToken() or its 20-character
  // predecessor (>= 115 bits): only such passwords are moved to the fast hash.
  static bool looksGenerated(std::string_view password);
  static constexpr std::size_t kTokenLength = 22;

 private:
  AuthKey key_;
  HashCost cost_;
};

// Random lower-case hex of 2 * bytes characters (secrets, tokens).
std::string randomHex(std::size_t bytes);

}  // namespace lcc
