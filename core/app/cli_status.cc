// lcc status — the daemon's /admin/status (GET /status plus a provider summary),
// printed for a human on one screen in the spirit of `postqueue -p` and `redis-cli
// info`: problems first (the list GET / shows, http/status_page.h), then one line each
// for the queue, fetches (errors by code), providers, robots, BOT-M, spool and CU.
// `--json` prints the whole document.
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "app/cli.h"
#include "http/admin_client.h"
#include "http/status_page.h"

namespace lcc::cli {
namespace {

using nlohmann::json;

std::string scalar(const json& v) {
  if (v.is_number_float()) {
    std::ostringstream out;
    out << v.get<double>();
    return out.str();
  }
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "-";
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  return v.dump();
}

const json& at(const json& j, std::initializer_list<const char*> path) {
  static const json kNull;
  const json* cur = &j;
  for (const char* k : path) {
    if (!cur->is_object() || !cur->contains(k)) return kNull;
    cur = &(*cur)[k];
  }
  return *cur;
}

std::string bytes(const json& v) {
  if (!v.is_number()) return scalar(v);
  double b = v.get<double>();
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  std::ostringstream out;
  out.precision(u == 0 ? 0 : 1);
  out << std::fixed << b << " " << kUnits[u];
  return out.str();
}

// One line per part of the node, the label padded like `postqueue -p` columns.
void line(std::ostream& out, const char* label, const std::string& text) {
  std::string l(label);
  l.resize(11, ' ');
  out << l << text << "\n";
}

void queueLines(std::ostream& out, const json& s) {
  const json& qm = at(s, {"qm"});
  if (!qm.is_object()) return;
  line(out, "queue", scalar(qm.value("queued_urls", json())) + " URLs queued, " + scalar(qm.value("in_flight", json())) +
                         " fetching (limit " + scalar(qm.value("in_flight_limit", json())) + "), " +
                         scalar(qm.value("ready_sets", json())) + " sets ready");
  std::string errors;
  std::uint64_t total = 0;
  for (const auto& [code, n] : http::fetchErrorsByCode(s)) {
    errors += (errors.empty() ? "" : ", ") + std::to_string(code) + ": " + std::to_string(n);
    total += n;
  }
  line(out, "fetches", scalar(qm.value("fetched", json())) + " stored, " + scalar(qm.value("unchanged", json())) +
                           " unchanged, " + std::to_string(total) + " failed" +
                           (errors.empty() ? "" : " (" + errors + ")") + ", " + scalar(qm.value("retries", json())) +
                           " retries");
}

void providerLines(std::ostream& out, const json& s) {
  const json& p = at(s, {"providers"});
  if (!p.is_object()) return;
  std::string text = scalar(p.value("total", json(0))) + " total: " + scalar(p.value("active", json(0))) + " active, " +
                     scalar(p.value("pending", json(0))) + " pending, " + scalar(p.value("suspended", json(0))) +
                     " suspended";
  if (at(s, {"qm"}).is_object()) {
    text += "; " + scalar(at(s, {"qm", "providers_queued"})) + " with queued URLs, " +
            scalar(at(s, {"qm", "providers_delayed"})) + " delayed";
  }
  line(out, "providers", text);
  std::string ids;
  for (const auto& x : p.value("fullset_wanted_ids", json::array())) ids += (ids.empty() ? "" : " ") + scalar(x);
  line(out, "", "full set wanted: " + scalar(p.value("fullset_wanted", json(0))) + (ids.empty() ? "" : " (ids " + ids + ")") +
                    "; fetch errors not yet reported to providers: " + scalar(p.value("errors_unreported", json(0))));
}

void robotLines(std::ostream& out, const json& s) {
  const json& bot = at(s, {"bot"});
  const json& botm = at(s, {"botm"});
  if (bot.is_object()) {
    line(out, "robots", scalar(bot.value("connected", json())) + "/" + scalar(bot.value("robots", json())) +
                            " connected, " + scalar(bot.value("slots_per_robot", json())) + " slots each, " +
                            scalar(bot.value("in_flight", json())) + " busy");
  }
  if (botm.is_object()) {
    line(out, "botm", std::string(botm.value("source_connected", false) ? "connected to " : "NOT connected to ") +
                          scalar(botm.value("source", json())) + ", capacity " + scalar(botm.value("capacity", json())) +
                          ", " + scalar(botm.value("queued", json())) + " waiting for a slot");
  }
}

void edgeLines(std::ostream& out, const json& s) {
  const json& f = at(s, {"uns", "forwarder"});
  if (f.is_object()) {
    line(out, "spool", scalar(f.value("spool_sets", json())) + " sets, " + bytes(f.value("spool_bytes", json())) +
                           " of " + bytes(f.value("spool_limit", json())) + "; " +
                           scalar(at(s, {"uns", "connections"})) + " CP connections");
  }
  const json& cu = at(s, {"cu"});
  if (cu.is_object()) {
    line(out, "cu", scalar(cu.value("answers_running", json())) + " answers running, " +
                        scalar(cu.value("answers_total", json())) + " since start, " +
                        scalar(cu.value("connections", json())) + " connections");
  }
}

// A screen for a person: problems first, then one line per part. --json has it all.
std::string render(const json& s) {
  std::ostringstream out;
  std::string roles;
  if (s.contains("roles") && s["roles"].is_array()) {
    for (const auto& r : s["roles"]) roles += (roles.empty() ? "" : ", ") + scalar(r);
  }
  out << "lccd " << (s.contains("machine_id") ? scalar(s["machine_id"]) : "?") << "  roles: "
      << (roles.empty() ? "-" : roles) << "\n";
  const auto problems = http::statusProblems(s);
  if (problems.empty()) {
    out << "no problems\n";
  } else {
    out << problems.size() << (problems.size() == 1 ? " PROBLEM\n" : " PROBLEMS\n");
    for (const auto& p : problems) out << "  ! " << p << "\n";
  }
  queueLines(out, s);
  providerLines(out, s);
  robotLines(out, s);
  edgeLines(out, s);
  out << "(lcc status --json: everything, with every counter)\n";
  return out.str();
}

}  // namespace

void addStatusCommand(CLI::App& app, Globals& g) {
  auto* cmd = app.add_subcommand("status", "queue sizes, providers, robots, spool, overload, errors");
  auto json_out = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json_out, "print the whole status document (every role's section and counter) as JSON");
  cmd->callback([&g, json_out] {
    runAdmin(
        g, "GET", "/admin/status", "",
        [json_out](const http::ClientResponse& r) {
          auto j = json::parse(r.body, nullptr, false);
          if (j.is_discarded() || !j.is_object()) {
            std::cerr << "lcc: the daemon's status is not JSON\n";
            return 1;
          }
          std::cout << (*json_out ? j.dump(2) + "\n" : render(j));
          return 0;
        });
  });
}

}  // namespace lcc::cli
