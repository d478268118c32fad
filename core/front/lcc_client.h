// lcc_client.h — the front end's calls to one sub-LCC's admin API (docs/protocol.md §7),
// each bounded by front.request_timeout (http::adminRequest, blocking).
// THREADS: any; each call makes its own connection.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "front/front_options.h"
#include "http/admin_client.h"
#include "lcc/env.h"
#include "lcc/status.h"

namespace lcc::front {

// An answer that came (any HTTP status); an error Status when none came.
using LccAnswer = Result<http::ClientResponse>;

class LccClient {
 public:
  LccClient(Env* env, Millis timeout) : env_(env), timeout_(timeout) {}

  LccAnswer call(const LccSpec& lcc, const std::string& method, const std::string& path,
                 const std::string& form = "") const;
  // The same, bounded by `timeout` instead (a slot move's export: front.move_wait).
  LccAnswer callWithin(Millis timeout, const LccSpec& lcc, const std::string& method, const std::string& path) const;
  // GET /admin/status: providers.total, the load measure (placement.h).
  struct Load {
    std::uint64_t providers = 0;
  };
  Result<Load> load(const LccSpec& lcc) const;
  // The provider whose contact is `marker` (GET /admin/providers), not one being
  // removed; nullopt: none.
  Result<std::optional<std::uint64_t>> findMarked(const LccSpec& lcc, const std::string& marker) const;

 private:
  LccAnswer request(Millis timeout, const LccSpec& lcc, const std::string& method, const std::string& path,
                    const std::string& form) const;
  Env* env_;
  Millis timeout_;
};

// The form fields of `query` (decoded), encoded again; `skip` left out.
std::string encodeForm(const std::multimap<std::string, std::string>& query, const std::string& skip = "");

}  // namespace lcc::front
