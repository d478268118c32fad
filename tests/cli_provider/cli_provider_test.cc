// `lcc provider ...` and `lcc status`: the real lcc binary against an in-test HTTP
// server carrying the admin routes over a storage-memory ProviderStore (real loader).
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <arpa/inet.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../http/http_test_client.h"
#include "common/config/config.h"
#include "common/logging.h"
#include "common/password.h"
#include "common/plugin/plugin_registry.h"
#include "common/posix_env.h"
#include "http/admin_api.h"
#include "support/sim_clock.h"
#include "support/temp_dir.h"

namespace lcc {
namespace {

using nlohmann::json;

struct RunResult {
  int rc = -1;
  std::string out;
  std::string err;
};

std::string shellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out.push_back(c);
  }
  return out + "'";
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class CliProviderTest : public ::testing::Test {
 protected:
  CliProviderTest()
      : registry_(LCC_PLUGIN_DIR, HostContext{&clock_, posixEnv(), pluginLogger("test"), dir_.path(), "m1"}) {
    auto store = registry_.makeProviderStore("storage-memory", OptionsView());
    EXPECT_TRUE(store.isOk()) << store.status().toString();
    store_ = std::move(store).value();
    token_ = randomHex(24);
    writeToken(dir_.path(), token_);

    http::AdminContext ctx;
    ctx.options = http::AdminOptions::fromConfig(Config::defaults());
    ctx.options.qm_reads_providers = false;  // no QM reads this store: a removal deletes at once
    ctx.providers = store_.get();
    ctx.env = posixEnv();
    ctx.clock = &clock_;
    ctx.router = &router_;
    ctx.options.token_file = dir_.file("admin.token");
    ctx.options.provider_defaults.default_quota_files = 777;
    ctx.options.provider_defaults.default_quota_bytes = 1 << 20;
    ctx.options.provider_defaults.default_priority = 3;
    ctx.options.passwords = passwords_;
    http::registerAdminRoutes(router_, ctx);
    router_.add("GET", "/status", [](const http::Request&) {
      // The keys lccd emits (the roles' status(), Metrics::snapshot()); a real lccd is
      // checked by tests/e2e/operator_test.py.
      json j{{"machine_id", "m1"},
             {"roles", {"uns", "qm", "botm", "bot"}},
             {"qm", {{"queued_urls", 42}, {"in_flight", 3}, {"in_flight_limit", 24}, {"ready_sets", 2},
                     {"overloaded", true}, {"cache_crash", false}, {"failed", false}, {"fetched", 20},
                     {"unchanged", 1}, {"fetch_errors", 3}, {"retries", 0}, {"providers_queued", 1},
                     {"providers_delayed", 0}}},
             {"botm", {{"source", "127.0.0.1:7702"}, {"source_connected", true}, {"capacity", 32}, {"queued", 0}}},
             {"bot", {{"robots", 2}, {"connected", 2}, {"slots_per_robot", 32}, {"in_flight", 5}}},
             {"uns", {{"connections", 1},
                      {"forwarder", {{"qm", "127.0.0.1:7701"}, {"qm_connected", true}, {"spool_sets", 0},
                                     {"spool_bytes", 0}, {"spool_limit", 1073741824}, {"spool_full", false}}}}},
             {"counters", {{"lcc_uns_sets_accepted_total", 9},
                           {"lcc_qm_fetch_errors_total{code=\"301\"}", 2},
                           {"lcc_qm_fetch_errors_total{code=\"306\"}", 1}}}};
      return http::Response::json(200, j.dump());
    });
    server_ = std::make_unique<http::testing::ServerFixture>(router_);
    EXPECT_TRUE(server_->startStatus().isOk());
  }

  static void writeToken(const std::string& dir, const std::string& token) {
    std::string path = dir + "/admin.token";
    std::ofstream(path) << token << "\n";
    ::chmod(path.c_str(), 0600);
  }

  std::string http() const { return "127.0.0.1:" + std::to_string(server_->port()); }

  // Runs lcc with `args`; `env` is prepended (VAR=value ...).
  RunResult lcc(const std::vector<std::string>& args, const std::string& env = "") {
    std::string cmd = "env -u LCC_ADMIN_TOKEN " + env + " " + shellQuote(std::string(LCC_BIN_DIR) + "/lcc");
    for (const auto& a : args) cmd += " " + shellQuote(a);
    const std::string out = dir_.file("out.txt"), err = dir_.file("err.txt");
    cmd += " >" + shellQuote(out) + " 2>" + shellQuote(err) + " </dev/null";
    int status = std::system(cmd.c_str());
    RunResult r;
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }
  RunResult lccWithToken(std::vector<std::string> args) {
    args.insert(args.begin(), {"--http", http()});
    return lcc(args, "LCC_ADMIN_TOKEN=" + token_);
  }

  std::optional<ProviderRecord> stored(ProviderId id) {
    auto r = store_->get(id);
    EXPECT_TRUE(r.isOk());
    return r.isOk() ? r.value() : std::nullopt;
  }

  testing::TempDir dir_;
  testing::SimClock clock_;
  PluginRegistry registry_;
  PluginPtr<ProviderStore> store_;
  std::shared_ptr<const PasswordHasher> passwords_ = PasswordHasher::ephemeral();
  std::string token_;
  http::Router router_;
  std::unique_ptr<http::testing::ServerFixture> server_;
};

TEST_F(CliProviderTest, AddPrintsIdAndGeneratedPasswordAndStoresOnlyAHash) {
  RunResult r = lccWithToken({"provider", "add", "--prefix", "http://www.server.com/", "--prefix",
                              "https://cdn.server.com/static/"});
  ASSERT_EQ(r.rc, 0) << r.err;
  std::string id, password;
  {
    std::istringstream in(r.out);
    std::string a, b;
    in >> a >> b;
    ASSERT_EQ(a.rfind("id=", 0), 0u) << r.out;
    ASSERT_EQ(b.rfind("password=", 0), 0u) << r.out;
    id = a.substr(3);
    password = b.substr(9);
  }
  EXPECT_EQ(r.out, "id=" + id + " password=" + password + "\n");  // exactly one line
  EXPECT_GE(password.size(), 12u);
  auto p = stored(static_cast<ProviderId>(std::stoul(id)));
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->state, ProviderState::kActive);
  EXPECT_EQ(p->prefixes, (std::vector<std::string>{"http://www.server.com/", "https://cdn.server.com/static/"}));
  EXPECT_EQ(p->priority, 3);
  EXPECT_EQ(p->quota_files, 777u);
  EXPECT_EQ(p->quota_bytes, 1u << 20);
  EXPECT_NE(p->password_hash, password);
  EXPECT_EQ(p->password_hash.find(password), std::string::npos);
  EXPECT_EQ(p->password_hash.rfind("$lcc-b2k$", 0), 0u) << "a generated token gets the fast keyed hash";
  EXPECT_TRUE(passwords_->verify(p->password_hash, password).ok);
  EXPECT_FALSE(passwords_->verify(p->password_hash, password + "x").ok);
}

TEST_F(CliProviderTest, AddTakesPasswordPriorityAndBandwidth) {
  RunResult r = lccWithToken({"provider", "add", "--prefix", "http://a.example/", "--priority", "-7", "--bandwidth",
                              "50000", "--password", "s3cret pass&word"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "id=1 password=s3cret pass&word\n");
  auto p = stored(1);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->priority, -7);
  EXPECT_EQ(p->bandwidth, 50000u);
  EXPECT_EQ(p->password_hash.rfind("$argon2id$", 0), 0u) << "a chosen password keeps Argon2id";
  EXPECT_TRUE(passwords_->verify(p->password_hash, "s3cret pass&word").ok);
}

// The front end marks the providers it makes on a sub-LCC in `contact` (core/front).
TEST_F(CliProviderTest, AddKeepsAContactAndRefusesOneWithAControlCharacter) {
  auto post = [this](const std::string& contact) {
    http::Request req;
    req.method = "POST";
    req.path = req.target = "/admin/providers";
    req.remote_ip = "127.0.0.1";
    req.remote_loopback = true;
    req.headers["authorization"] = "Bearer " + token_;
    req.query.emplace("prefix", "http://c.example/");
    req.query.emplace("contact", contact);
    return router_.dispatch(req);
  };
  http::Response ok = post("lcc-front:lcc_front:42");
  ASSERT_EQ(ok.status, 201) << ok.body;
  auto p = stored(static_cast<ProviderId>(json::parse(ok.body)["id"].get<std::uint64_t>()));
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->contact, "lcc-front:lcc_front:42");
  EXPECT_EQ(post("a\r\nb").status, 400);
  EXPECT_EQ(post(std::string(257, 'c')).status, 400);
}

// A front end's slot move (core/front): the hash is read from one node and stored at
// another, and a keyed hash only where the server key is the same (docs/security.md §2).
TEST_F(CliProviderTest, AStoredHashMovesToANodeWithTheSameKeyOnly) {
  auto call = [this](const std::string& method, const std::string& path,
                     std::vector<std::pair<std::string, std::string>> fields) {
    http::Request req;
    req.method = method;
    req.path = req.target = path;
    req.remote_ip = "127.0.0.1";
    req.remote_loopback = true;
    req.headers["authorization"] = "Bearer " + token_;
    for (auto& [k, v] : fields) req.query.emplace(k, v);
    return router_.dispatch(req);
  };
  http::Response made = call("POST", "/admin/providers", {{"prefix", "http://m.example/"}});
  ASSERT_EQ(made.status, 201) << made.body;
  const json m = json::parse(made.body);
  const std::string id = std::to_string(m["id"].get<std::uint64_t>());
  const std::string password = m["password"];
  EXPECT_EQ(json::parse(call("GET", "/admin/providers/" + id, {}).body).count("password_hash"), 0u)
      << "the hash is never part of a provider's GET";
  http::Response cred = call("GET", "/admin/providers/" + id + "/credentials", {});
  ASSERT_EQ(cred.status, 200) << cred.body;
  const json c = json::parse(cred.body);
  EXPECT_EQ(c["key_id"], passwords_->keyId());
  EXPECT_NE(c["key_id"], PasswordHasher::ephemeral()->keyId()) << "another key has another id";
  const std::string hash = c["password_hash"];
  const std::size_t before = json::parse(call("GET", "/admin/providers", {}).body)["providers"].size();
  http::Response other = call("POST", "/admin/providers", {{"prefix", "http://m.example/"}, {"password_hash", hash},
                                                           {"key_id", PasswordHasher::ephemeral()->keyId()}});
  EXPECT_EQ(other.status, 409) << other.body;
  EXPECT_EQ(call("POST", "/admin/providers", {{"prefix", "http://m.example/"}, {"password_hash", "$lcc-b2k$1$x"}}).status,
            400);
  EXPECT_EQ(json::parse(call("GET", "/admin/providers", {}).body)["providers"].size(), before) << "nothing stored";
  http::Response moved = call("POST", "/admin/providers",
                              {{"prefix", "http://m.example/"}, {"password_hash", hash}, {"key_id", c["key_id"]},
                               {"state", "suspended"}, {"state_reason", "front end: slot move"}});
  ASSERT_EQ(moved.status, 201) << moved.body;
  EXPECT_EQ(json::parse(moved.body).count("password"), 0u);
  auto p = stored(static_cast<ProviderId>(json::parse(moved.body)["id"].get<std::uint64_t>()));
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->password_hash, hash);
  EXPECT_TRUE(passwords_->verify(p->password_hash, password).ok) << "the provider's password works at the new node";
  EXPECT_EQ(p->state, ProviderState::kSuspended);
  EXPECT_EQ(p->state_reason, "front end: slot move");
}

TEST_F(CliProviderTest, BadInputIsAUsageErrorAndStoresNothing) {
  RunResult bad_url = lccWithToken({"provider", "add", "--prefix", "ftp://x.example/"});
  EXPECT_EQ(bad_url.rc, 2);
  EXPECT_NE(bad_url.err.find("ftp://x.example/"), std::string::npos) << bad_url.err;
  EXPECT_EQ(std::count(bad_url.err.begin(), bad_url.err.end(), '\n'), 1) << bad_url.err;
  RunResult bad_prio = lccWithToken({"provider", "add", "--prefix", "http://x/", "--priority", "5000"});
  EXPECT_EQ(bad_prio.rc, 2);
  EXPECT_NE(bad_prio.err.find("priority"), std::string::npos);
  RunResult no_prefix = lccWithToken({"provider", "add"});
  EXPECT_EQ(no_prefix.rc, 2);
  RunResult no_cmd = lccWithToken({"provider"});
  EXPECT_EQ(no_cmd.rc, 2);
  std::size_t n = 0;
  ASSERT_TRUE(store_->scan([&](const ProviderRecord&) { return ++n, true; }).isOk());
  EXPECT_EQ(n, 0u);
}

TEST_F(CliProviderTest, ListShowWantFullSetRemove) {
  ASSERT_EQ(lccWithToken({"provider", "add", "--prefix", "http://one.example/"}).rc, 0);
  ASSERT_EQ(lccWithToken({"provider", "add", "--prefix", "http://two.example/docs/"}).rc, 0);

  RunResult list = lccWithToken({"provider", "list"});
  ASSERT_EQ(list.rc, 0) << list.err;
  EXPECT_NE(list.out.find("http://one.example/"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("http://two.example/docs/"), std::string::npos);
  EXPECT_NE(list.out.find("2 provider(s)"), std::string::npos);

  RunResult show = lccWithToken({"provider", "show", "2"});
  ASSERT_EQ(show.rc, 0) << show.err;
  json j = json::parse(show.out);
  EXPECT_EQ(j["id"], 2);
  EXPECT_EQ(j["state"], "active");
  EXPECT_EQ(j["prefixes"][0], "http://two.example/docs/");
  EXPECT_FALSE(j.contains("password_hash"));
  EXPECT_EQ(show.out.find("$argon2"), std::string::npos);

  RunResult want = lccWithToken({"provider", "want-full-set", "2"});
  ASSERT_EQ(want.rc, 0) << want.err;
  EXPECT_TRUE(stored(2)->fullset_wanted);
  EXPECT_EQ(stored(2)->fullset_reason, FullSetReason::kAdmin);
  EXPECT_FALSE(stored(1)->fullset_wanted);
  EXPECT_EQ(json::parse(lccWithToken({"provider", "show", "2"}).out)["fullset_reason"], "admin");

  RunResult rm = lccWithToken({"provider", "remove", "1"});
  ASSERT_EQ(rm.rc, 0) << rm.err;
  EXPECT_FALSE(stored(1).has_value());
  EXPECT_TRUE(stored(2).has_value());

  RunResult again = lccWithToken({"provider", "remove", "1"});
  EXPECT_EQ(again.rc, 1);
  EXPECT_NE(again.err.find("no provider 1"), std::string::npos) << again.err;
  EXPECT_EQ(lccWithToken({"provider", "show", "99"}).rc, 1);
  EXPECT_EQ(lccWithToken({"provider", "want-full-set", "99"}).rc, 1);
  EXPECT_EQ(lccWithToken({"provider", "show", "abc"}).rc, 2);  // not a number: usage
}

TEST_F(CliProviderTest, WrongOrMissingTokenIsRefused) {
  RunResult wrong = lcc({"--http", http(), "provider", "list"}, "LCC_ADMIN_TOKEN=" + token_ + "x");
  EXPECT_EQ(wrong.rc, 1);
  EXPECT_NE(wrong.err.find("401"), std::string::npos) << wrong.err;
  EXPECT_NE(wrong.err.find("token"), std::string::npos) << wrong.err;
  RunResult add = lcc({"--http", http(), "provider", "add", "--prefix", "http://x/"}, "LCC_ADMIN_TOKEN=nope");
  EXPECT_EQ(add.rc, 1);
  std::size_t n = 0;
  ASSERT_TRUE(store_->scan([&](const ProviderRecord&) { return ++n, true; }).isOk());
  EXPECT_EQ(n, 0u);

  // No token at all: neither env nor a readable config.
  RunResult none = lcc({"--config", dir_.file("missing.yaml"), "--http", http(), "provider", "list"});
  EXPECT_EQ(none.rc, 2);
  EXPECT_FALSE(none.err.empty());

  // Over raw HTTP: 401 without the header, 401 with a wrong one.
  http::testing::Client c(server_->port());
  EXPECT_EQ(c.request("GET", "/admin/providers").result_int(), 401);
  EXPECT_EQ(c.request("GET", "/admin/providers", "", {{"Authorization", "Bearer wrong"}}).result_int(), 401);
  EXPECT_EQ(c.request("GET", "/admin/anything", "", {{"Authorization", "Bearer wrong"}}).result_int(), 401);
  EXPECT_EQ(c.request("GET", "/admin/providers", "", {{"Authorization", "Bearer " + token_}}).result_int(), 200);
}

TEST_F(CliProviderTest, ConfigFileGivesPortAndToken) {
  testing::TempDir data;
  writeToken(data.path(), token_);
  std::string cfg = dir_.file("lcc.yaml");
  std::ofstream(cfg) << "node:\n  data_dir: " << data.path() << "\nlisten:\n  http: " << http() << "\n";
  RunResult r = lcc({"--config", cfg, "provider", "add", "--prefix", "http://cfg.example/"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.rfind("id=1 password=", 0), 0u);
  // --http with the token from --config's data_dir.
  RunResult r2 = lcc({"--config", cfg, "--http", http(), "provider", "list"});
  EXPECT_EQ(r2.rc, 0) << r2.err;
}

TEST_F(CliProviderTest, ConnectionProblemsAreExitCode2WithOneLine) {
  // A port nobody listens on: take one and close it.
  std::uint16_t dead;
  {
    boost::asio::io_context io;
    boost::asio::ip::tcp::acceptor a(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
    dead = a.local_endpoint().port();
  }
  RunResult r = lcc({"--http", "127.0.0.1:" + std::to_string(dead), "provider", "list"}, "LCC_ADMIN_TOKEN=x");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("cannot connect"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
  RunResult bad = lcc({"--http", "nonsense", "status"}, "LCC_ADMIN_TOKEN=x");
  EXPECT_EQ(bad.rc, 2);
}

TEST_F(CliProviderTest, StatusPrintsQueuesProvidersRobotsSpoolAndCounters) {
  ASSERT_EQ(lccWithToken({"provider", "add", "--prefix", "http://one.example/"}).rc, 0);
  ASSERT_EQ(lccWithToken({"provider", "want-full-set", "1"}).rc, 0);
  RunResult r = lccWithToken({"status"});
  ASSERT_EQ(r.rc, 0) << r.err;
  for (const char* want : {"lccd m1  roles: uns, qm, botm, bot\n1 PROBLEM\n  ! Overloaded",
                           "queue      42 URLs queued, 3 fetching (limit 24), 2 sets ready",
                           "fetches    20 stored, 1 unchanged, 3 failed (301: 2, 306: 1), 0 retries",
                           "providers  1 total: 1 active, 0 pending, 0 suspended; 1 with queued URLs, 0 delayed",
                           "full set wanted: 1 (ids 1)", "robots     2/2 connected, 32 slots each, 5 busy",
                           "botm       connected to 127.0.0.1:7702, capacity 32, 0 waiting",
                           "spool      0 sets, 0 B of 1.0 GiB; 1 CP connections"}) {
    EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << r.out;
  }
  EXPECT_LE(std::count(r.out.begin(), r.out.end(), '\n'), 24) << "one screen:\n" << r.out;
  EXPECT_EQ(r.out.find("lcc_uns_sets_accepted_total"), std::string::npos) << "counters only in --json";
  RunResult js = lccWithToken({"status", "--json"});
  ASSERT_EQ(js.rc, 0);
  EXPECT_EQ(json::parse(js.out)["providers"]["total"], 1);
  EXPECT_EQ(json::parse(js.out)["counters"]["lcc_uns_sets_accepted_total"], 9);
  EXPECT_EQ(lcc({"--http", http(), "status"}, "LCC_ADMIN_TOKEN=bad").rc, 1);
}

TEST(AdminAccess, LoopbackOnlyUnlessAllowedAndTheTokenMustMatch) {
  http::Request req;
  req.remote_ip = "192.0.2.7";
  req.remote_loopback = false;
  req.headers["authorization"] = "Bearer tok123";
  auto refused = http::checkAdminAccess(req, "tok123", false);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->status, 403);
  EXPECT_FALSE(http::checkAdminAccess(req, "tok123", true).has_value());  // http.admin_remote: true

  req.remote_loopback = true;
  EXPECT_FALSE(http::checkAdminAccess(req, "tok123", false).has_value());
  req.headers["authorization"] = "bearer tok123";  // scheme is case-insensitive
  EXPECT_FALSE(http::checkAdminAccess(req, "tok123", false).has_value());
  req.headers["authorization"] = "Bearer tok12";
  EXPECT_EQ(http::checkAdminAccess(req, "tok123", false)->status, 401);
  req.headers["authorization"] = "Bearer tok1234";
  EXPECT_EQ(http::checkAdminAccess(req, "tok123", false)->status, 401);
  req.headers["authorization"] = "Basic dG9rMTIz";
  EXPECT_EQ(http::checkAdminAccess(req, "tok123", false)->status, 401);
  req.headers.erase("authorization");
  EXPECT_EQ(http::checkAdminAccess(req, "tok123", false)->status, 401);
  req.headers["authorization"] = "Bearer ";
  EXPECT_EQ(http::checkAdminAccess(req, "", false)->status, 503);  // no token file: nobody gets in

  EXPECT_TRUE(http::constantTimeEquals("abc", "abc"));
  EXPECT_FALSE(http::constantTimeEquals("abc", "abd"));
  EXPECT_FALSE(http::constantTimeEquals("ab", "abc"));
  EXPECT_FALSE(http::constantTimeEquals("abcd", "abc"));
  EXPECT_FALSE(http::constantTimeEquals("", "abc"));
}

// This host's first non-loopback IPv4 address, or "" when it has none.
std::string nonLoopbackAddress() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return "";
  std::string found;
  for (ifaddrs* a = list; a != nullptr && found.empty(); a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    char buf[INET_ADDRSTRLEN];
    auto* in = reinterpret_cast<sockaddr_in*>(a->ifa_addr);
    if (::inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf) && std::string(buf).rfind("127.", 0) != 0) found = buf;
  }
  ::freeifaddrs(list);
  return found;
}

// Over a real socket from a non-loopback address: refused unless http.admin_remote.
TEST(AdminAccess, ANonLoopbackPeerIsRefusedUnlessRemoteAdminIsAllowed) {
  const std::string ip = nonLoopbackAddress();
  if (ip.empty()) GTEST_SKIP() << "this host has no non-loopback IPv4 address";
  testing::TempDir dir;
  const std::string token = randomHex(16);
  std::ofstream(dir.file("admin.token")) << token << "\n";
  testing::SimClock clock;
  PluginRegistry registry(LCC_PLUGIN_DIR, HostContext{&clock, posixEnv(), pluginLogger("test"), dir.path(), "m1"});
  auto store = registry.makeProviderStore("storage-memory", OptionsView());
  ASSERT_TRUE(store.isOk());
  for (bool allow : {false, true}) {
    http::Router router;
    http::AdminContext ctx;
    ctx.options = http::AdminOptions::fromConfig(Config::defaults());
    ctx.providers = store.value().get();
    ctx.env = posixEnv();
    ctx.options.token_file = dir.file("admin.token");
    ctx.options.admin_remote = allow;
    http::registerAdminRoutes(router, ctx);
    http::ServerOptions opts = http::ServerOptions::fromConfig(Config::defaults());
    opts.listen = ip + ":0";
    http::testing::ServerFixture fx(router, opts);
    ASSERT_TRUE(fx.startStatus().isOk()) << fx.startStatus().toString();
    http::testing::Client c(fx.port(), ip);
    auto res = c.request("GET", "/admin/providers", "", {{"Authorization", "Bearer " + token}});
    EXPECT_EQ(res.result_int(), allow ? 200 : 403) << res.body();
  }
}

TEST(NodeRoutes, HomePageLinksAndTheRestStays404) {
  std::vector<ConfigProblem> problems;
  testing::TempDir dir;
  auto cfg = Config::loadText("node:\n  machine_id: edge-7\nroles: [rs, cu]\n", dir.file("lcc.yaml"), {}, &problems);
  ASSERT_TRUE(cfg.isOk());
  http::Router router;
  NodeContext node;
  node.config = &cfg.value();
  node.env = posixEnv();
  node.data_dir = dir.path();
  node.machine_id = "edge-7";
  node.http = &router;
  http::registerNodeRoutes(node);
  http::testing::ServerFixture fx(router);
  http::testing::Client c(fx.port());
  auto home = c.request("GET", "/");
  EXPECT_EQ(home.result_int(), 200);
  EXPECT_EQ(home[boost::beast::http::field::content_type], "text/html; charset=utf-8");
  for (const char* want : {"edge-7", "rs, cu", "href=\"/register\"", "href=\"/status\"", "href=\"/metrics\"", "/cu/query"}) {
    EXPECT_NE(home.body().find(want), std::string::npos) << want;
  }
  EXPECT_EQ(c.request("GET", "/no/such/page").result_int(), 404);
  // No provider store on this node, no token file: the admin API says so, never crashes.
  auto admin = c.request("GET", "/admin/providers", "", {{"Authorization", "Bearer x"}});
  EXPECT_EQ(admin.result_int(), 503);
}

TEST_F(CliProviderTest, SetSuspendResumeAndRemoveChangeTheStoredProvider) {
  ASSERT_EQ(lccWithToken({"provider", "add", "--prefix", "http://one.example/", "--password", "old secret"}).rc, 0);
  ASSERT_EQ(lccWithToken({"provider", "add", "--prefix", "http://two.example/"}).rc, 0);
  RunResult set = lccWithToken({"provider", "set", "1", "--priority", "9", "--bandwidth", "10", "--quota-files", "5",
                                "--quota-bytes", "6", "--add-prefix", "http://three.example/a/", "--remove-prefix",
                                "http://one.example/"});
  ASSERT_EQ(set.rc, 0) << set.err;
  EXPECT_EQ(json::parse(set.out)["priority"], 9);
  ProviderRecord p = *stored(1);
  EXPECT_EQ(p.priority, 9);
  EXPECT_EQ(p.bandwidth, 10u);
  EXPECT_EQ(p.quota_files, 5u);
  EXPECT_EQ(p.quota_bytes, 6u);
  EXPECT_EQ(p.prefixes, std::vector<std::string>{"http://three.example/a/"});
  EXPECT_TRUE(passwords_->verify(p.password_hash, "old secret").ok);

  ASSERT_EQ(lccWithToken({"provider", "set", "1", "--password", "new secret"}).rc, 0);
  EXPECT_NE(stored(1)->password_hash, p.password_hash);
  EXPECT_TRUE(passwords_->verify(stored(1)->password_hash, "new secret").ok);
  EXPECT_FALSE(passwords_->verify(stored(1)->password_hash, "old secret").ok);
  EXPECT_EQ(stored(1)->priority, 9) << "a password change leaves the rest";

  EXPECT_EQ(lccWithToken({"provider", "set", "1"}).rc, 2);  // nothing to change
  for (std::vector<std::string> bad : {std::vector<std::string>{"--priority", "2000"}, {"--bandwidth", "x"},
                                       {"--add-prefix", "ftp://x/"}, {"--remove-prefix", "http://three.example/a/"},
                                       {"--remove-prefix", "http://nowhere.example/"}, {"--password", ""}}) {
    bad.insert(bad.begin(), {"provider", "set", "1"});
    RunResult r = lccWithToken(bad);
    EXPECT_EQ(r.rc, 2) << bad[3] << " " << r.err;  // HTTP 400
  }
  EXPECT_EQ(stored(1)->prefixes, std::vector<std::string>{"http://three.example/a/"});
  EXPECT_EQ(lccWithToken({"provider", "set", "99", "--priority", "1"}).rc, 1);

  RunResult sus = lccWithToken({"provider", "suspend", "1"});
  ASSERT_EQ(sus.rc, 0) << sus.err;
  EXPECT_EQ(sus.out, "provider 1: suspended\n");
  EXPECT_EQ(stored(1)->state, ProviderState::kSuspended);
  EXPECT_EQ(lccWithToken({"provider", "resume", "1"}).out, "provider 1: active\n");
  EXPECT_EQ(stored(1)->state, ProviderState::kActive);
  EXPECT_EQ(lccWithToken({"provider", "suspend", "99"}).rc, 1);

  // No QM reads this store: the record goes at once, a purge is refused.
  RunResult purge = lccWithToken({"provider", "remove", "2", "--purge"});
  EXPECT_EQ(purge.rc, 1);
  EXPECT_NE(purge.err.find("purge needs the QM"), std::string::npos) << purge.err;
  RunResult rm = lccWithToken({"provider", "remove", "2"});
  ASSERT_EQ(rm.rc, 0) << rm.err;
  EXPECT_NE(rm.out.find("its content stays and is still exported"), std::string::npos) << rm.out;
  EXPECT_FALSE(stored(2).has_value());
}

TEST_F(CliProviderTest, SetSitemapKeepsItUnderThePrefixesAndTheIntervalInBounds) {
  ASSERT_EQ(lccWithToken({"provider", "add", "--prefix", "http://one.example/docs/", "--prefix",
                          "http://two.example/"}).rc, 0);
  RunResult set = lccWithToken({"provider", "set", "1", "--sitemap", "http://ONE.example:80/docs/sitemap.xml.gz",
                                "--sitemap-interval", "6h"});
  ASSERT_EQ(set.rc, 0) << set.err;
  EXPECT_EQ(json::parse(set.out)["sitemap"], "http://one.example/docs/sitemap.xml.gz") << "stored in normal form";
  EXPECT_EQ(json::parse(set.out)["sitemap_interval_ms"], 6 * 3600 * 1000);
  EXPECT_EQ(stored(1)->sitemap_url, "http://one.example/docs/sitemap.xml.gz");
  EXPECT_EQ(stored(1)->sitemap_interval, Millis(6 * 3600 * 1000));
  for (std::vector<std::string> bad :
       {std::vector<std::string>{"--sitemap", "http://one.example/sitemap.xml"}, {"--sitemap", "ftp://one.example/docs/s"},
        {"--sitemap-interval", "10s"}, {"--sitemap-interval", "400d"}, {"--sitemap-interval", "soon"},
        {"--remove-prefix", "http://one.example/docs/"}}) {
    bad.insert(bad.begin(), {"provider", "set", "1"});
    RunResult r = lccWithToken(bad);
    EXPECT_EQ(r.rc, 2) << bad[3] << " " << r.err;  // HTTP 400
  }
  EXPECT_EQ(stored(1)->sitemap_url, "http://one.example/docs/sitemap.xml.gz") << "refusals change nothing";
  EXPECT_EQ(stored(1)->prefixes.size(), 2u);
  ASSERT_EQ(lccWithToken({"provider", "set", "1", "--sitemap-interval", "0"}).rc, 0);
  EXPECT_EQ(stored(1)->sitemap_interval, Millis(0));
  ASSERT_EQ(lccWithToken({"provider", "set", "1", "--sitemap", ""}).rc, 0);
  EXPECT_EQ(stored(1)->sitemap_url, "");
  ASSERT_EQ(lccWithToken({"provider", "set", "1", "--remove-prefix", "http://one.example/docs/"}).rc, 0)
      << "without a sitemap the prefix may go";
}

}  // namespace
}  // namespace lcc
