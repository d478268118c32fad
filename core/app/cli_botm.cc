// lcc botm sweep — the orphan sweep (issue 15): asks the QM of this node to have every
// BOT-M list its content files and delete those the LCC DB does not reference, waits
// until the deletes are done (or --wait seconds pass) and prints the bytes reclaimed.
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "app/cli.h"
#include "http/admin_client.h"

namespace lcc::cli {
namespace {

using nlohmann::json;

std::uint64_t num(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_number_unsigned() ? j[key].get<std::uint64_t>() : 0;
}

// The sweep is over when no link still lists and every orphan found was deleted.
bool finished(const json& sweep) {
  return sweep.is_object() && !sweep.value("running", true) && num(sweep, "reclaimed_files") >= num(sweep, "orphans");
}

void print(const json& s) {
  std::cout << "sweep " << num(s, "id") << ": " << num(s, "files_listed") << " file(s) listed, " << num(s, "orphans")
            << " orphan(s) of " << num(s, "orphan_bytes") << " bytes; reclaimed " << num(s, "reclaimed_files")
            << " file(s), " << num(s, "reclaimed_bytes") << " bytes";
  if (num(s, "links_lost") > 0) std::cout << " (" << num(s, "links_lost") << " BOT-M link(s) lost mid-sweep)";
  std::cout << "\n";
}

int waitForSweep(const http::AdminTarget& target, std::uint64_t id, int wait_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(wait_s);
  json last;
  for (;;) {
    auto r = http::adminRequest(target, "GET", "/admin/status");
    if (r.isOk() && r.value().status == 200) {
      auto j = json::parse(r.value().body, nullptr, false);
      if (!j.is_discarded() && j.contains("qm") && j["qm"].contains("sweep")) last = j["qm"]["sweep"];
    }
    if (num(last, "id") == id && finished(last)) {
      print(last);
      return 0;
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  std::cerr << "lcc: sweep " << id << " not finished after " << wait_s << " s (lcc status --json shows qm.sweep)\n";
  if (num(last, "id") == id) print(last);
  return 1;
}

}  // namespace

void addBotmCommands(CLI::App& app, Globals& g) {
  auto* botm = app.add_subcommand("botm", "BOT-M maintenance");
  botm->require_subcommand(1);
  auto* sweep = botm->add_subcommand(
      "sweep", "delete content files the LCC DB does not reference (orphans) on every BOT-M; prints the bytes reclaimed");
  auto wait_s = std::make_shared<int>(60);
  sweep->add_option("--wait", *wait_s, "seconds to wait for the sweep and its deletes (0: do not wait)")
      ->check(CLI::Range(0, 86400));
  sweep->callback([&g, wait_s] {
    auto endpoint = adminEndpoint(g);
    auto target = endpoint.isOk() ? http::resolveAdminTarget(g.config_file, endpoint.value())
                                  : Result<http::AdminTarget>(endpoint.status());
    runAdmin(g, "POST", "/admin/botm/sweep", "", [&target, wait_s](const http::ClientResponse& r) {
      auto j = json::parse(r.body, nullptr, false);
      const std::uint64_t id = j.is_discarded() ? 0 : num(j, "id");
      std::cout << "sweep " << id << " started on " << num(j, "links_waiting") << " BOT-M link(s)\n";
      if (*wait_s == 0 || !target.isOk()) return 0;
      return waitForSweep(target.value(), id, *wait_s);
    });
  });
}

}  // namespace lcc::cli
