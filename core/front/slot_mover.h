// slot_mover.h — carries out slot moves (`lcc front move-slot`, POST
// /admin/slots/<slot>/move): each row of the `moves` table is taken step by step
// (slot_move.h) against the two sub-LCCs' admin APIs, its phase written to the
// PMDB's database after each step. A front end killed mid-step does the step again on
// the next call or refresh (each step may be done twice with the same result).
// THREADS: thread-safe; one pass at a time (a second caller returns at once: busy).
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "front/front_db.h"
#include "front/lcc_client.h"
#include "front/slot_move.h"

namespace lcc::front {

class SlotMover {
 public:
  // `forget(id)`: drops the CP port's cached route of provider `id`.
  SlotMover(const FrontOptions& options, FrontDb& db, const LccClient& client, Clock* clock,
            std::function<void(std::uint64_t)> forget);

  struct Pass {
    bool busy = false;        // another pass was running: nothing was done
    std::uint64_t moved = 0;  // providers whose move ended in this pass
    std::uint64_t left = 0;   // moves still recorded (of `slot`, or all)
    std::uint64_t held_elsewhere = 0;  // of them, claimed by another front end sharing the PMDB (skipped)
    std::string error;        // the last step that failed, with why
  };
  // Takes every recorded move (of `slot` only, when given) as far as it goes now.
  Pass run(std::optional<std::uint32_t> slot);

 private:
  Status step(MoveRow& m, MoveStep s);
  Status suspend(const std::string& lcc, std::uint64_t local_id, bool suspend);
  Status waitDrained(const MoveRow& m);
  Status createTarget(MoveRow& m);
  Result<std::uint64_t> makeAtTarget(const MoveRow& m, const LccSpec& dst);
  Status copySettings(const MoveRow& m, const LccSpec& dst, const nlohmann::json& shown);
  Status copyUrls(const MoveRow& m);
  Status importPage(const MoveRow& m, const nlohmann::json& urls, std::uint64_t& chunk);
  Status awaitCopies(const MoveRow& m);
  Status removeSource(const MoveRow& m);
  Status removeTarget(const MoveRow& m);
  std::optional<LccSpec> spec(const std::string& name) const;

  const FrontOptions& opt_;
  FrontDb& db_;
  const LccClient& client_;
  Clock* clock_;
  std::function<void(std::uint64_t)> forget_;
  std::mutex run_mu_;
};

}  // namespace lcc::front
