// The plugin loader refuses broken plugins with one line naming the file, what was
// expected and what was found — through PluginRegistry directly, and through
// `lccd -c X --check` (exit 2). Broken plugins come from ${build}/test-plugins; each
// test copies what it needs into a private folder with mode 0755 (the loader refuses
// group-writable files, and the build's umask is not ours to trust).
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "common/plugin/plugin_registry.h"
#include "common/posix_env.h"
#include "support/sim_clock.h"
#include "support/temp_dir.h"

namespace lcc {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// Copies `<from_dir>/<name>.so` into `<to_dir>/<name>.so` with `mode`.
std::string install(const std::string& from_dir, const std::string& name, const std::string& to_dir,
                    fs::perms mode = fs::perms(0755)) {
  fs::create_directories(to_dir);
  const std::string to = to_dir + "/" + name + ".so";
  fs::copy_file(from_dir + "/" + name + ".so", to, fs::copy_options::overwrite_existing);
  fs::permissions(to, mode, fs::perm_options::replace);
  return to;
}

struct ProcessRun {
  int code = -1;
  std::string output;  // stdout and stderr together
  std::vector<std::string> lines() const {
    std::vector<std::string> out;
    std::stringstream ss(output);
    std::string l;
    while (std::getline(ss, l)) {
      if (!l.empty()) out.push_back(l);
    }
    return out;
  }
};

ProcessRun runCommand(const std::string& command) {
  ProcessRun r;
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

class PluginAbiTest : public ::testing::Test {
 protected:
  std::string plugins() const { return dir_.path() + "/plugins"; }
  std::string installBroken(const std::string& name) { return install(LCC_TEST_PLUGIN_DIR, name, plugins()); }
  std::string installGood(const std::string& name, fs::perms mode = fs::perms(0755)) {
    return install(LCC_PLUGIN_DIR, name, plugins(), mode);
  }
  PluginRegistry registry() { return PluginRegistry(plugins(), HostContext{&clock_, posixEnv(), nullptr, dir_.path(), "m1"}); }

  // The refusal of loading `name`: must be one line naming the file.
  std::string refusal(const std::string& name) {
    const std::string path = installBroken(name);
    PluginRegistry reg(plugins(), HostContext{&clock_, posixEnv(), nullptr, dir_.path(), "m1"});
    auto r = reg.load(name);
    EXPECT_FALSE(r.isOk()) << name << " was accepted";
    if (r.isOk()) return "";
    const std::string& m = r.status().message();
    EXPECT_EQ(m.find('\n'), std::string::npos) << "one line: " << m;
    EXPECT_EQ(m.rfind(path, 0), 0u) << "starts with the file: " << m;
    return m;
  }

  TempDir dir_;
  testing::SimClock clock_;
};

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// ---------------------------------------------------------------- loader unit tests

TEST_F(PluginAbiTest, WrongAbiMajorIsRefused) {
  std::string m = refusal("bad-abi-major");
  EXPECT_TRUE(has(m, "plugin ABI " + std::to_string(LCC_PLUGIN_ABI_MAJOR + 1) + ".")) << m;
  EXPECT_TRUE(has(m, "lccd supports " + std::to_string(LCC_PLUGIN_ABI_MAJOR) + ".x")) << m;
}

TEST_F(PluginAbiTest, NewerMinorIsRefused) {
  std::string m = refusal("newer-minor");
  EXPECT_TRUE(has(m, std::to_string(LCC_PLUGIN_ABI_MAJOR) + "." + std::to_string(LCC_PLUGIN_ABI_MINOR + 1))) << m;
  EXPECT_TRUE(has(m, "newer than lccd's")) << m;
}

TEST_F(PluginAbiTest, WrongBuildSignatureIsRefused) {
  std::string m = refusal("bad-signature");
  EXPECT_TRUE(has(m, "'gcc0,glibcxx0")) << m;
  EXPECT_TRUE(has(m, std::string("expected '") + LCC_BUILD_SIGNATURE + "'")) << m;
}

TEST_F(PluginAbiTest, OtherApiHashIsRefused) {
  std::string m = refusal("bad-api-hash");
  EXPECT_TRUE(has(m, "000000000000")) << m;
  EXPECT_TRUE(has(m, std::string(LCC_API_HASH).substr(0, 12))) << m;
}

TEST_F(PluginAbiTest, NoAliasIsRefused) {
  std::string m = refusal("no-alias");
  EXPECT_TRUE(has(m, "lcc_plugin")) << m;
  EXPECT_TRUE(has(m, "found none")) << m;
}

TEST_F(PluginAbiTest, NameDifferentFromFileStemIsRefused) {
  std::string m = refusal("wrong-name");
  EXPECT_TRUE(has(m, "'another-name'")) << m;
  EXPECT_TRUE(has(m, "expected 'wrong-name'")) << m;
}

TEST_F(PluginAbiTest, GroupWritableFileIsRefused) {
  const std::string path = installGood("fetch-stub", fs::perms(0775));
  auto reg = registry();
  auto r = reg.load("fetch-stub");
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().message().rfind(path, 0), 0u) << r.status().message();
  EXPECT_TRUE(has(r.status().message(), "writable by group")) << r.status().message();
}

TEST_F(PluginAbiTest, ThrowingFactoryBecomesAStatus) {
  const std::string path = installBroken("throwing-factory");
  auto reg = registry();
  ASSERT_TRUE(reg.load("throwing-factory").isOk()) << "it is a valid plugin until its factory runs";
  auto f = reg.makeFetcher("throwing-factory", OptionsView());
  ASSERT_FALSE(f.isOk());
  EXPECT_EQ(f.status().code(), StatusCode::kInternal);
  EXPECT_TRUE(has(f.status().message(), path)) << f.status().message();
  EXPECT_TRUE(has(f.status().message(), "this factory always throws")) << f.status().message();
}

TEST_F(PluginAbiTest, NamesWithSlashesAreRefused) {
  auto reg = registry();
  EXPECT_FALSE(reg.load("../plugins/fetch-stub").isOk());
  EXPECT_FALSE(reg.load("").isOk());
  auto missing = reg.load("no-such-plugin");
  ASSERT_FALSE(missing.isOk());
  EXPECT_TRUE(has(missing.status().message(), "no-such-plugin.so")) << missing.status().message();
}

TEST_F(PluginAbiTest, ObjectsOfAGoodPluginKeepTheLibraryAlive) {
  installGood("fetch-stub");
  PluginPtr<Fetcher> fetcher;
  {
    auto reg = registry();
    auto opts = reg.defaultOptions("fetch-stub");
    ASSERT_TRUE(opts.isOk());
    auto f = reg.makeFetcher("fetch-stub", opts.value());
    ASSERT_TRUE(f.isOk()) << f.status().toString();
    fetcher = std::move(f).value();
  }  // the registry is gone; the fetcher's deleter still holds the library
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  FetchResult got;
  FetchRequest req;
  req.id = 1;
  req.url = "http://h/after-registry";
  req.path = dir_.file("body");
  ASSERT_TRUE(fetcher
                  ->start(req,
                          [&](const FetchResult& r) {
                            std::lock_guard<std::mutex> l(mu);
                            got = r;
                            done = true;
                            cv.notify_all();
                          })
                  .isOk());
  {
    std::unique_lock<std::mutex> l(mu);
    ASSERT_TRUE(cv.wait_for(l, std::chrono::seconds(10), [&] { return done; }));
  }
  EXPECT_TRUE(got.ok()) << got.message;
  fetcher.reset();  // runs the plugin's destructor, then lets go of the library
}

// ---------------------------------------------------------------- lccd --check

class LccdCheckTest : public PluginAbiTest {
 protected:
  void SetUp() override {
    if (!fs::exists(lccd())) GTEST_SKIP() << lccd() << " is not built";
    installGood("storage-memory");
    installGood("fetch-stub");
  }
  static std::string lccd() { return std::string(LCC_BIN_DIR) + "/lccd"; }

  std::string config(const std::string& fetcher, const std::string& extra = "") {
    const std::string file = dir_.file("lcc.yaml");
    std::ofstream out(file);
    out << "node:\n  data_dir: " << dir_.path() << "/data\n  machine_id: m1\n"
        << "roles: [bot]\n"
        << "storage:\n  plugin_dir: " << plugins() << "\n"
        << "  queue: storage-memory\n  content: storage-memory\n  providers: storage-memory\n"
        << "fetcher: " << fetcher << "\n"
        << "exporters: []\n"
        << extra;
    return file;
  }
  ProcessRun check(const std::string& file) { return runCommand(lccd() + " -c " + file + " --check --config-only"); }

  // A broken plugin named as the fetcher: exit 2 and exactly one line, naming it.
  void expectOneLine(const std::string& name, const std::string& why) {
    const std::string file = config(name);
    ProcessRun r = check(file);
    EXPECT_EQ(r.code, 2) << r.output;
    auto lines = r.lines();
    ASSERT_EQ(lines.size(), 1u) << r.output;
    EXPECT_TRUE(has(lines[0], plugins() + "/" + name + ".so")) << lines[0];
    EXPECT_TRUE(has(lines[0], why)) << lines[0];
    EXPECT_EQ(lines[0].rfind(file + ": fetcher: ", 0), 0u) << "FILE: key: why — " << lines[0];
  }
};

TEST_F(LccdCheckTest, EachBrokenPluginGetsOneClearLineAndExit2) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"bad-abi-major", "lccd supports"},
      {"newer-minor", "newer than lccd's"},
      {"bad-signature", "build signature"},
      {"bad-api-hash", "api hash"},
      {"no-alias", "lcc_plugin"},
      {"wrong-name", "expected 'wrong-name'"},
      {"throwing-factory", "this factory always throws"},
  };
  for (const auto& [name, why] : cases) {
    SCOPED_TRACE(name);
    installBroken(name);
    expectOneLine(name, why);
  }
}

TEST_F(LccdCheckTest, GroupWritablePluginGetsOneLineAndExit2) {
  installGood("fetch-stub", fs::perms(0775));
  expectOneLine("fetch-stub", "writable by group");
}

TEST_F(LccdCheckTest, GoodPluginsPassAndThePlanIsPrinted) {
  const std::string file = config("fetch-stub");
  ProcessRun r = check(file);
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r.output, file + ": configuration is valid")) << r.output;
  EXPECT_TRUE(has(r.output, "roles: bot")) << r.output;
  EXPECT_TRUE(has(r.output, "plugin fetch-stub")) << r.output;
  EXPECT_TRUE(has(r.output, "plugin storage-memory")) << r.output;
  EXPECT_FALSE(fs::exists(dir_.path() + "/data/admin.token")) << "--check creates nothing in data_dir";
}

TEST_F(LccdCheckTest, UnknownKeysAndBadPluginOptionsAreReportedWithTheirPath) {
  const std::string file =
      config("{plugin: fetch-stub, options: {no_such_option: 1, default_size: lots}}", "uns:\n  nonsense: 3\n");
  ProcessRun r = check(file);
  EXPECT_EQ(r.code, 2) << r.output;
  auto lines = r.lines();
  auto line_for = [&](const std::string& key) {
    for (const auto& l : lines) {
      if (l.rfind(file + ": " + key + ": ", 0) == 0) return l;
    }
    return std::string();
  };
  EXPECT_FALSE(line_for("uns.nonsense").empty()) << r.output;
  // Plugin options are checked against the plugin's table once the core keys are valid.
  const std::string fixed = config("{plugin: fetch-stub, options: {no_such_option: 1, default_size: lots}}");
  r = check(fixed);
  EXPECT_EQ(r.code, 2) << r.output;
  lines = r.lines();
  EXPECT_FALSE(line_for("fetcher.options.no_such_option").empty()) << r.output;
  EXPECT_FALSE(line_for("fetcher.options.default_size").empty()) << r.output;
}

}  // namespace
}  // namespace lcc
