// front_core.h — the front end's state and admin work, without sockets: the sub-LCCs
// and their load (refreshed from each one's GET /admin/status), placement of new
// providers (placement.h, in the PMDB through front_db.h), the cleaning of pending
// rows, the forwarding of the other `lcc provider` calls to the sub-LCC holding the
// provider, and the provider → sub-LCC route the CP relay asks for (relay.h).
// THREADS: thread-safe. Every call to a sub-LCC or to PostgreSQL blocks (bounded by
// front.request_timeout): call from the HTTP workers, the refresher or a pool.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "front/front_db.h"
#include "front/lcc_client.h"
#include "front/mapping_cache.h"
#include "front/placement.h"
#include "front/slot_mover.h"
#include "http/http_server.h"
#include "lcc/clock.h"

namespace lcc::front {

class FrontCore {
 public:
  FrontCore(FrontOptions options, std::unique_ptr<FrontDb> db, Env* env, Clock* clock);

  // Reads every sub-LCC's load and records it in the FEDB.
  void refreshLoads();
  // Cleans pending rows older than front.pending_grace (at most 16 a pass).
  void cleanPending();

  // POST /admin/providers: placed on the least loaded live sub-LCC.
  http::Response addProvider(const http::Request& req);
  // GET /admin/providers: the PMDB, with the sub-LCC of each provider.
  http::Response listProviders();
  // /admin/providers/<id>[/<action>]: forwarded to the sub-LCC holding the provider.
  http::Response forward(const http::Request& req);
  // GET /admin/slots: the slot directory with provider counts.
  http::Response listSlots();
  // POST /admin/slots/<slot>/move?to=LCC: plans the slot's move and carries it out.
  http::Response moveSlot(const http::Request& req);
  // The refresher's part: recorded moves taken further (a front end killed mid-move).
  void resumeMoves();
  // GET /status (the front role's part).
  void status(nlohmann::json& out) const;

  // The sub-LCC holding provider `id` and its UNS address; nullopt when no placed row
  // names it. Error: the PMDB could not be read, or the row names a sub-LCC that
  // front.lccs does not (the CP is told to try later).
  struct Target {
    std::string uns;  // host:port
    std::uint64_t local_id = 0;
    std::shared_ptr<net::TlsContextSlot> tls;  // set: TLS, the certificate checked for tls_name
    std::string tls_name;                      // empty: the host of uns
    bool proxy_v2 = false;                     // the session starts with a PROXY v2 header naming the CP
  };
  Result<std::optional<Target>> route(std::uint64_t id);

  const FrontOptions& options() const { return opt_; }

 private:
  std::optional<LccSpec> spec(const std::string& name) const;
  std::vector<LccLoad> loads() const;
  AddFlow::Action reserve(AddFlow& flow);
  AddFlow::Action create(AddFlow& flow, const http::Request& req, std::string* password);
  void settle(const Mapping& row);

  FrontOptions opt_;
  std::unique_ptr<FrontDb> db_;
  LccClient client_;
  Clock* clock_;
  MappingCache cache_;
  SlotMover mover_;
  mutable std::mutex mu_;
  std::map<std::string, LccLoad> loads_;  // by name
};

}  // namespace lcc::front
