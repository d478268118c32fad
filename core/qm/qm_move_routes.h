// qm_move_routes.h — the QM's admin routes of a front end's slot move
// (core/front/slot_move.h; docs/protocol.md §7):
//   GET  /admin/qm/providers/<id>/export[?limit=N][&after=CURSOR][&copies=1]
//        {"held", "in_flight", "unapplied", "copies", "store", "truncated", "next",
//        "urls": [{"c","m","mt","sz","md5","b","f","st","tod"[,"at"]}...]}: what the
//        engine holds of the provider, and one page of its stored and queued URLs as
//        notices in key order after CURSOR (limit 0: the counts only; default and most
//        100,000; "truncated": true and "next", the cursor of the next page, when there
//        are more). A stored URL carries "at": {"path", "md5", "sz"}, its record's
//        GET /cu/content/<store>/<seq> path and actual MD5 and size. "copies" (with copies=1): its
//        queued copies still to take from another QM (move_copy.h).
//   POST /admin/qm/providers/<id>/import   name=, chunk= (the set's intake name and
//        number: a set sent twice is a duplicate, not applied twice), urls= (JSON, as
//        the export's; a URL with "cp": {"u", "md5", "sz"} is a copy: its bytes are
//        taken from that URL, checked, else its site is fetched): taken in as an intake
//        set (journaled, then acked): 200 once acked
// The admin token and peer rules of core/http/admin_api.h. Each waits at most 10 s
// for the engine (then 503).
#pragma once

#include <functional>

#include "common/service.h"
#include "qm/queue_manager.h"

namespace lcc::qm {

// `post` runs a function on the engine strand; `stopping` is read there.
void registerMoveRoutes(NodeContext& node, QueueManager* qm, std::function<void(std::function<void()>)> post,
                        std::function<bool()> stopping);

// The URLs of one import (JSON array of notices of provider `pid`); why when refused.
Result<std::vector<UrlNotice>> parseMoveUrls(const std::string& json_text, ProviderId pid);
nlohmann::json moveUrlToJson(const UrlNotice& n);

}  // namespace lcc::qm
