// lcc status — the daemon's /admin/status (GET /status plus a provider summary),
// printed for a human: queue sizes, providers, robots, spool, overload, errors.
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "app/cli.h"
#include "http/admin_client.h"

namespace lcc::cli {
namespace {

using nlohmann::json;

std::string scalar(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "-";
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  return v.dump();
}

bool allScalars(const json& arr) {
  for (const auto& x : arr) {
    if (x.is_structured()) return false;
  }
  return true;
}

// key: value lines, nested sections indented by two spaces.
void printTree(std::ostream& out, const json& j, int indent) {
  const std::string pad(static_cast<std::size_t>(indent), ' ');
  for (auto it = j.begin(); it != j.end(); ++it) {
    const json& v = it.value();
    if (v.is_object()) {
      out << pad << it.key() << ":" << (v.empty() ? " -" : "") << "\n";
      printTree(out, v, indent + 2);
    } else if (v.is_array() && allScalars(v)) {
      std::string joined;
      for (const auto& x : v) joined += (joined.empty() ? "" : ", ") + scalar(x);
      out << pad << it.key() << ": " << (joined.empty() ? "-" : joined) << "\n";
    } else if (v.is_array()) {
      out << pad << it.key() << ": " << v.size() << "\n";
      for (const auto& x : v) {
        out << pad << "  -\n";
        if (x.is_object()) printTree(out, x, indent + 4);
        else out << pad << "    " << scalar(x) << "\n";
      }
    } else {
      out << pad << it.key() << ": " << scalar(v) << "\n";
    }
  }
}

std::string render(const json& s) {
  std::ostringstream out;
  std::string roles;
  if (s.contains("roles") && s["roles"].is_array()) {
    for (const auto& r : s["roles"]) roles += (roles.empty() ? "" : ", ") + scalar(r);
  }
  out << "lccd " << (s.contains("machine_id") ? scalar(s["machine_id"]) : "?") << "  roles: "
      << (roles.empty() ? "-" : roles) << "\n";
  if (s.contains("providers") && s["providers"].is_object()) {
    const json& p = s["providers"];
    out << "providers: " << scalar(p.value("total", json(0))) << " total, " << scalar(p.value("active", json(0)))
        << " active, " << scalar(p.value("pending", json(0))) << " pending, "
        << scalar(p.value("suspended", json(0))) << " suspended\n";
    out << "  full set wanted: " << scalar(p.value("fullset_wanted", json(0)));
    if (p.contains("fullset_wanted_ids") && !p["fullset_wanted_ids"].empty()) {
      std::string ids;
      for (const auto& x : p["fullset_wanted_ids"]) ids += (ids.empty() ? "" : " ") + scalar(x);
      out << " (ids " << ids << ")";
    }
    out << "\n  fetch errors not yet reported to providers: " << scalar(p.value("errors_unreported", json(0)))
        << "\n";
    if (p.contains("error")) out << "  provider store error: " << scalar(p["error"]) << "\n";
  }
  // The roles' own sections (queues, robots, spool, overload...), in the order they came.
  for (auto it = s.begin(); it != s.end(); ++it) {
    const std::string& k = it.key();
    if (k == "machine_id" || k == "roles" || k == "providers" || k == "counters") continue;
    if (it.value().is_object()) {
      out << k << ":\n";
      printTree(out, it.value(), 2);
    } else {
      out << k << ": " << scalar(it.value()) << "\n";
    }
  }
  if (s.contains("counters") && s["counters"].is_object() && !s["counters"].empty()) {
    out << "counters:\n";
    printTree(out, s["counters"], 2);
  }
  return out.str();
}

}  // namespace

void addStatusCommand(CLI::App& app, Globals& g) {
  auto* cmd = app.add_subcommand("status", "queue sizes, providers, robots, spool, overload, errors");
  auto json_out = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json_out, "print the daemon's JSON as it came");
  cmd->callback([&g, json_out] {
    g.exit_code = http::runAdminCommand(
        g.config_file, g.http, "GET", "/admin/status", "",
        [json_out](const http::ClientResponse& r) {
          auto j = json::parse(r.body, nullptr, false);
          if (j.is_discarded() || !j.is_object()) {
            std::cerr << "lcc: the daemon's status is not JSON\n";
            return 1;
          }
          std::cout << (*json_out ? j.dump(2) + "\n" : render(j));
          return 0;
        },
        std::cerr);
  });
}

}  // namespace lcc::cli
