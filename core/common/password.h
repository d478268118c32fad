// password.h — provider passwords: salted, slow hashes (libsodium Argon2id), never
// the password itself. The hash string carries its own salt and cost parameters.
#pragma once

#include <string>
#include <string_view>

#include "lcc/status.h"

namespace lcc {

enum class HashCost { kInteractive, kModerate };

// Parses "interactive" / "moderate" (config key uns.password_hash_ops).
Result<HashCost> parseHashCost(std::string_view text);
Result<std::string> hashPassword(std::string_view password, HashCost cost = HashCost::kInteractive);
bool verifyPassword(std::string_view hash, std::string_view password);
// A random password of `length` characters from an unambiguous alphabet.
std::string generatePassword(std::size_t length = 20);
// Random lower-case hex of 2 * bytes characters (secrets, tokens).
std::string randomHex(std::size_t bytes);

}  // namespace lcc
