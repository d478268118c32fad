// lcc provider add|list|show|set|suspend|resume|remove|want-full-set — through the admin API
// (core/http/admin_api.h) of the daemon.
#include <iostream>
#include <sstream>
#include <nlohmann/json.hpp>

#include "app/cli.h"
#include "http/admin_client.h"
#include "http/url_codec.h"

namespace lcc::cli {
namespace {

using nlohmann::json;


std::string field(const json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return "-";
  const json& v = j[key];
  return v.is_string() ? v.get<std::string>() : v.dump();
}

void printList(const json& body) {
  const json& arr = body.contains("providers") ? body["providers"] : json::array();
  std::printf("%-6s %-9s %8s %12s %6s  %s\n", "ID", "STATE", "PRIORITY", "BANDWIDTH", "WANT", "PREFIXES");
  for (const auto& p : arr) {
    std::string prefixes;
    if (p.contains("prefixes")) {
      for (const auto& x : p["prefixes"]) prefixes += (prefixes.empty() ? "" : " ") + x.get<std::string>();
    }
    std::printf("%-6s %-9s %8s %12s %6s  %s\n", field(p, "id").c_str(), field(p, "state").c_str(),
                field(p, "priority").c_str(), field(p, "bandwidth").c_str(),
                p.value("fullset_wanted", false) ? "full" : "-", prefixes.c_str());
  }
  std::printf("%zu provider(s)\n", arr.size());
}

// "mail": the last mail of each event to the owner (GET /admin/mail/<id>, served by
// the rs role); left out when this node runs no rs role.
void addLastMails(Globals& g, std::uint32_t id, json& provider) {
  auto endpoint = adminEndpoint(g);
  if (!endpoint.isOk()) return;
  std::ostringstream quiet;  // a node without the rs role answers 404: no "mail" then
  (void)http::runAdminCommand(g.config_file, endpoint.value(), "GET", "/admin/mail/" + std::to_string(id), "",
                              [&provider](const http::ClientResponse& r) {
                                json m = jsonBody(r);
                                if (m.contains("mail")) provider["mail"] = m["mail"];
                                if (m.contains("enabled")) provider["mail_enabled"] = m["enabled"];
                                return 0;
                              },
                              quiet);
}

using RunFn = std::function<void(const std::string&, const std::string&, const std::string&,
                                   const std::function<int(const http::ClientResponse&)>&)>;

// lcc provider set ID [--priority N] [--bandwidth B] [--quota-files N] [--quota-bytes B]
//                     [--add-prefix URL]... [--remove-prefix URL]... [--password P]
//                     [--sitemap URL] [--sitemap-interval DURATION]
void addProviderSetCommand(CLI::App* provider, Globals& g, const RunFn& run, const std::shared_ptr<std::uint32_t>& id) {
  struct SetArgs {
    std::string priority, bandwidth, quota_files, quota_bytes, password, sitemap, sitemap_interval;
    std::vector<std::string> add_prefixes, remove_prefixes;
  };
  auto a = std::make_shared<SetArgs>();
  auto* set = provider->add_subcommand("set", "change a provider (effective at its next fetch or session)");
  set->add_option("ID", *id, "provider id")->required();
  set->add_option("--priority", a->priority, "higher is fetched first (-1000..1000)");
  set->add_option("--bandwidth", a->bandwidth, "bytes per second (0: unlimited)");
  set->add_option("--quota-files", a->quota_files, "files kept at most (0: unlimited)");
  set->add_option("--quota-bytes", a->quota_bytes, "bytes kept at most (0: unlimited)");
  set->add_option("--add-prefix", a->add_prefixes, "URL prefix to add (repeatable)");
  set->add_option("--remove-prefix", a->remove_prefixes, "URL prefix to remove (repeatable)");
  set->add_option("--password", a->password, "a new password (the old one stops working)");
  set->add_option("--sitemap", a->sitemap,
                  "a sitemap or sitemap index under a prefix, read by the LCC every interval (\"\": none)");
  set->add_option("--sitemap-interval", a->sitemap_interval,
                  "how often the sitemap is read: 30m, 6h, 1d (0: sitemap.default_interval)");
  set->callback([&g, run, a, set, id] {
    std::string form;
    auto param = [&form](const char* name, const std::string& v) {
      form += (form.empty() ? "" : "&") + std::string(name) + "=" + http::percentEncode(v);
    };
    if (set->count("--priority") > 0) param("priority", a->priority);
    if (set->count("--bandwidth") > 0) param("bandwidth", a->bandwidth);
    if (set->count("--quota-files") > 0) param("quota_files", a->quota_files);
    if (set->count("--quota-bytes") > 0) param("quota_bytes", a->quota_bytes);
    for (const auto& p : a->add_prefixes) param("add_prefix", p);
    for (const auto& p : a->remove_prefixes) param("remove_prefix", p);
    if (set->count("--password") > 0) param("password", a->password);
    if (set->count("--sitemap") > 0) param("sitemap", a->sitemap);
    if (set->count("--sitemap-interval") > 0) param("sitemap_interval", a->sitemap_interval);
    if (form.empty()) {
      std::cerr << "lcc provider set: nothing to change (see --help)\n";
      g.exit_code = 2;
      return;
    }
    run("POST", "/admin/providers/" + std::to_string(*id), form, [](const http::ClientResponse& r) {
      std::cout << jsonBody(r).dump(2) << "\n";
      return 0;
    });
  });
}

// lcc provider show ID: the provider (with "sitemap_poll", from the daemon), and "mail" (addLastMails).
void addProviderShowCommand(CLI::App* provider, Globals& g, const RunFn& run, const std::shared_ptr<std::uint32_t>& id) {
  auto* show = provider->add_subcommand("show", "everything about one provider (JSON): its sitemap polls (sitemap_poll), the last mail of each event");
  show->add_option("ID", *id, "provider id")->required();
  show->callback([run, id, &g] {
    run("GET", "/admin/providers/" + std::to_string(*id), "", [id, &g](const http::ClientResponse& r) {
      json j = jsonBody(r);
      addLastMails(g, *id, j);
      std::cout << j.dump(2) << "\n";
      return 0;
    });
  });
}

}  // namespace

void addProviderCommands(CLI::App& app, Globals& g) {
  auto* provider = app.add_subcommand("provider", "add, list, show, change, suspend, resume, remove providers; ask one for a full set");
  provider->require_subcommand(1);
  auto run = [&g](const std::string& method, const std::string& path, const std::string& form,
                  const std::function<int(const http::ClientResponse&)>& on_ok) {
    runAdmin(g, method, path, form, on_ok);
  };

  struct AddArgs {
    std::vector<std::string> prefixes;
    std::string priority, bandwidth, password;
    bool password_given = false;
  };
  auto add_args = std::make_shared<AddArgs>();
  auto* add = provider->add_subcommand("add", "register a provider (active at once); prints id=<n> password=<p>");
  add->add_option("--prefix", add_args->prefixes, "URL prefix the provider may notify (repeatable)")->required();
  add->add_option("--priority", add_args->priority, "higher is fetched first (-1000..1000)");
  add->add_option("--bandwidth", add_args->bandwidth, "bytes per second (0: unlimited)");
  add->add_option("--password", add_args->password, "the provider's password (default: generated)");
  add->callback([run, add_args, add] {
    std::string form;
    auto param = [&form](const char* name, const std::string& v) {
      form += (form.empty() ? "" : "&") + std::string(name) + "=" + http::percentEncode(v);
    };
    for (const auto& p : add_args->prefixes) param("prefix", p);
    if (!add_args->priority.empty()) param("priority", add_args->priority);
    if (!add_args->bandwidth.empty()) param("bandwidth", add_args->bandwidth);
    if (add->count("--password") > 0) param("password", add_args->password);
    run("POST", "/admin/providers", form, [](const http::ClientResponse& r) {
      json j = jsonBody(r);
      std::cout << "id=" << field(j, "id") << " password=" << field(j, "password") << "\n";
      return 0;
    });
  });

  auto* list = provider->add_subcommand("list", "every provider, one per line");
  list->callback([run] {
    run("GET", "/admin/providers", "", [](const http::ClientResponse& r) {
      printList(jsonBody(r));
      return 0;
    });
  });

  auto id = std::make_shared<std::uint32_t>(0);
  auto idPath = [id] { return "/admin/providers/" + std::to_string(*id); };
  addProviderShowCommand(provider, g, run, id);

  auto purge = std::make_shared<bool>(false);
  auto* remove = provider->add_subcommand("remove", "remove a provider: its queued URLs are not fetched");
  remove->add_option("ID", *id, "provider id")->required();
  remove->add_flag("--purge", *purge, "also remove its content (tombstones for content users, files deleted)");
  remove->callback([run, idPath, id, purge] {
    run("DELETE", idPath() + (*purge ? "?purge=1" : ""), "", [id](const http::ClientResponse& r) {
      json j = jsonBody(r);
      if (j.value("purge", false)) {
        std::cout << "provider " << *id << " removed; its content is being removed (tombstones for content users, "
                  << "files deleted)\n";
      } else {
        std::cout << "provider " << *id << " removed; its content stays and is still exported to content users "
                  << "(remove --purge removes it)\n";
      }
      return 0;
    });
  });

  for (const char* verb : {"suspend", "resume"}) {
    const bool suspend = std::string(verb) == "suspend";
    auto* cmd = provider->add_subcommand(
        verb, suspend ? "refuse the provider's sessions (111) and hold its queued URLs; content stays readable"
                      : "let a suspended provider connect and its queued URLs be fetched again");
    cmd->add_option("ID", *id, "provider id")->required();
    cmd->callback([run, idPath, id, verb] {
      run("POST", idPath() + "/" + verb, "", [id](const http::ClientResponse& r) {
        std::cout << "provider " << *id << ": " << field(jsonBody(r), "state") << "\n";
        return 0;
      });
    });
  }

  addProviderSetCommand(provider, g, run, id);

  auto* want = provider->add_subcommand("want-full-set", "ask the provider for a full set at its next connection");
  want->add_option("ID", *id, "provider id")->required();
  want->callback([run, idPath, id] {
    run("POST", idPath() + "/want-full-set", "", [id](const http::ClientResponse&) {
      std::cout << "provider " << *id << ": full set wanted (reason admin)\n";
      return 0;
    });
  });
}

}  // namespace lcc::cli
