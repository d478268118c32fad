// lcc front slots | move-slot SLOT --to LCC — the front end's slot directory
// (core/front/README.md, "Slots"): through the admin API of a front end.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "app/cli.h"
#include "http/admin_client.h"
#include "http/url_codec.h"

namespace lcc::cli {
namespace {

using nlohmann::json;


void printSlots(const json& body) {
  const json& held = body.contains("held") ? body["held"] : json::array();
  std::printf("%-6s %-16s %6s %9s %6s %9s\n", "SLOT", "LCC", "EPOCH", "PROVIDERS", "MOVING", "ELSEWHERE");
  for (const auto& s : held) {
    std::printf("%-6s %-16s %6s %9s %6s %9s\n", s["slot"].dump().c_str(), s.value("lcc", "-").c_str(),
                s["epoch"].dump().c_str(), s["providers"].dump().c_str(), s["moving"].dump().c_str(),
                s["elsewhere"].dump().c_str());
  }
  std::printf("%zu of %s slot(s) held\n", held.size(), body.contains("slots") ? body["slots"].dump().c_str() : "?");
  for (const auto& m : body.value("moves", json::array())) {
    std::printf("move: provider %s of slot %s, %s -> %s, phase %s\n", m["provider"].dump().c_str(),
                m["slot"].dump().c_str(), m.value("from", "").c_str(), m.value("to", "").c_str(),
                m.value("phase", "").c_str());
  }
}

}  // namespace

void addFrontCommands(CLI::App& app, Globals& g) {
  auto* front = app.add_subcommand("front", "a front end's slot directory (the role front)");
  front->require_subcommand(1);
  auto* slots = front->add_subcommand("slots", "list the held slots: sub-LCC, epoch, providers; moves under way");
  auto as_json = std::make_shared<bool>(false);
  slots->add_flag("--json", *as_json, "print the answer as JSON");
  slots->callback([&g, as_json] {
    runAdmin(g, "GET", "/admin/slots", "", [as_json](const http::ClientResponse& r) {
      if (*as_json) std::cout << r.body;
      else printSlots(jsonBody(r));
      return 0;
    });
  });
  auto* move = front->add_subcommand(
      "move-slot", "move every provider of a slot to another sub-LCC (settings, stored and queued URLs); resumable");
  auto slot = std::make_shared<std::uint32_t>(0);
  auto to = std::make_shared<std::string>();
  move->add_option("SLOT", *slot, "the slot (provider id mod front.slots)")->required();
  move->add_option("--to", *to, "the sub-LCC to move it to (a name of front.lccs)")->required();
  move->callback([&g, slot, to] {
    runAdmin(g, "POST", "/admin/slots/" + std::to_string(*slot) + "/move", "to=" + http::percentEncode(*to),
             [](const http::ClientResponse& r) {
               json j = jsonBody(r);
               std::cout << "slot " << j.value("slot", 0) << " -> " << j.value("to", "") << ": "
                         << j.value("moved", 0) << " provider(s) moved"
                         << (r.status == 202 ? " (the front end is carrying the move; lcc front slots shows it)" : "")
                         << "\n";
               return 0;
             });
  });
}

}  // namespace lcc::cli
