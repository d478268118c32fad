#include "common/config/config.h"
#include "common/config/suggest.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

namespace lcc {
namespace {

using ::testing::HasSubstr;

std::vector<std::string> problemLines(const std::vector<ConfigProblem>& problems) {
  std::vector<std::string> out;
  for (const auto& p : problems) out.push_back(p.toString());
  return out;
}

TEST(Config, EmptyDocumentGivesDefaults) {
  std::vector<ConfigProblem> problems;
  auto cfg = Config::loadText("", "t.yaml", {}, &problems);
  ASSERT_TRUE(cfg.isOk()) << ::testing::PrintToString(problemLines(problems));
  EXPECT_EQ(cfg->getString("node.data_dir"), "./var");
  EXPECT_EQ(cfg->getString("listen.uns"), "127.0.0.1:7700");
  EXPECT_EQ(cfg->getInt("uns.idle_timeout"), 30000);
  EXPECT_EQ(cfg->getInt("uns.spool_limit"), 1LL << 30);
  EXPECT_EQ(cfg->getPlugin("storage.queue").plugin, "storage-kyoto");
  ASSERT_EQ(cfg->getPluginList("exporters").size(), 3u);
  EXPECT_EQ(cfg->getPluginList("exporters")[1].plugin, "cu-tar");
  EXPECT_EQ(cfg->getPluginList("exporters")[2].plugin, "cu-warc");
}

TEST(Config, CollectsEveryProblemWithItsKeyPath) {
  std::vector<ConfigProblem> problems;
  auto cfg = Config::loadText(
      "node:\n  data_dir: /x\n  colour: blue\n"
      "uns:\n  max_connections: -3\n  idle_timeout: soon\n"
      "listen:\n  uns: nowhere\n"
      "bogus: 1\n",
      "etc/lcc.yaml", {}, &problems);
  EXPECT_FALSE(cfg.isOk());
  auto lines = problemLines(problems);
  EXPECT_THAT(lines, ::testing::Contains("etc/lcc.yaml: node.colour: unknown key"));
  EXPECT_THAT(lines, ::testing::Contains("etc/lcc.yaml: bogus: unknown key"));
  EXPECT_THAT(lines, ::testing::Contains("etc/lcc.yaml: uns.max_connections: must be in [1, 1000000] (got -3)"));
  EXPECT_THAT(lines, ::testing::Contains(HasSubstr("uns.idle_timeout: must be a duration")));
  EXPECT_THAT(lines, ::testing::Contains(HasSubstr("listen.uns: must be host:port")));
  EXPECT_EQ(lines.size(), 5u);
}

TEST(Config, SetOverridesKeysAndPluginOptions) {
  std::vector<ConfigProblem> problems;
  auto cfg = Config::loadText("storage:\n  queue: storage-memory\n", "t.yaml",
                              {"node.data_dir=/srv/lcc-test", "listen.uns=127.0.0.1:17700",
                               "storage.queue.options.sync=false", "accept_mime=[text/html, image/*]"},
                              &problems);
  ASSERT_TRUE(cfg.isOk()) << ::testing::PrintToString(problemLines(problems));
  EXPECT_EQ(cfg->getString("node.data_dir"), "/srv/lcc-test");
  EXPECT_EQ(cfg->getString("listen.uns"), "127.0.0.1:17700");
  EXPECT_EQ(cfg->getPlugin("storage.queue").plugin, "storage-memory");
  EXPECT_EQ(cfg->getList("accept_mime"), (std::vector<std::string>{"text/html", "image/*"}));
  static const OptionSpec kSpecs[] = {{"sync", OptionType::kBool, "true", 1, 0, "sync"}};
  auto opts = cfg->pluginOptions(cfg->getPlugin("storage.queue"), kSpecs, 1, &problems);
  ASSERT_TRUE(opts.isOk());
  EXPECT_FALSE(opts->getBool("sync", true));
}

TEST(Config, PluginOptionsAreValidatedAgainstThePluginTable) {
  std::vector<ConfigProblem> problems;
  auto cfg = Config::loadText(
      "fetcher:\n  plugin: fetch-curl\n  options:\n    timeout: forever\n    colour: red\n", "f.yaml", {}, &problems);
  ASSERT_TRUE(cfg.isOk());
  static const OptionSpec kSpecs[] = {
      {"timeout", OptionType::kDuration, "30s", 1, 3600000, "total timeout"},
      {"max_size", OptionType::kSize, "50MiB", 1, 1LL << 40, "cap"},
  };
  auto opts = cfg->pluginOptions(cfg->getPlugin("fetcher"), kSpecs, 2, &problems);
  EXPECT_FALSE(opts.isOk());
  auto lines = problemLines(problems);
  EXPECT_THAT(lines, ::testing::Contains("f.yaml: fetcher.options.colour: unknown option of plugin fetch-curl"));
  EXPECT_THAT(lines, ::testing::Contains(HasSubstr("f.yaml: fetcher.options.timeout: must be a duration")));
}

TEST(Config, YamlSyntaxErrorIsOneProblemWithALine) {
  std::vector<ConfigProblem> problems;
  auto cfg = Config::loadText("node:\n  data_dir: [unclosed\n", "bad.yaml", {}, &problems);
  EXPECT_FALSE(cfg.isOk());
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_THAT(problems[0].toString(), HasSubstr("bad.yaml: YAML syntax error at line"));
}

TEST(Config, WrongShapesAreReported) {
  std::vector<ConfigProblem> problems;
  auto cfg = Config::loadText("node: 5\nroles: uns\nexporters: cu-xml\n", "s.yaml", {}, &problems);
  EXPECT_FALSE(cfg.isOk());
  auto lines = problemLines(problems);
  EXPECT_THAT(lines, ::testing::Contains("s.yaml: node: must be a map of keys (got 5)"));
  EXPECT_THAT(lines, ::testing::Contains("s.yaml: roles: must be a list (got uns)"));
  EXPECT_THAT(lines, ::testing::Contains("s.yaml: exporters: must be a list of plugins (got cu-xml)"));
}

// Found by config_fuzz (fuzz/corpus/config/tags.yaml): a list or a map as a key threw
// YAML::TypedBadConversion out of loadText() and took lccd down.
TEST(Config, AListOrAMapAsAKeyIsAProblemNotAnException) {
  std::vector<ConfigProblem> problems;
  auto cfg = Config::loadText(
      "? [1]\n: x\nnode: {? {a: b}: c}\nstorage:\n  queue: {plugin: storage-kyoto, ? [p]: q}\n",
      "k.yaml", {}, &problems);
  EXPECT_FALSE(cfg.isOk());
  auto lines = problemLines(problems);
  EXPECT_THAT(lines, ::testing::Contains("k.yaml: a key must be a name (got a list as a key)"));
  EXPECT_THAT(lines, ::testing::Contains("k.yaml: node: a key must be a name (got a map as a key)"));
  EXPECT_THAT(lines, ::testing::Contains("k.yaml: storage.queue: a key must be a name (got a list as a key)"));

  problems.clear();
  cfg = Config::loadText("fetcher:\n  plugin: fetch-curl\n  options: {? [t]: 1}\n", "o.yaml", {}, &problems);
  ASSERT_TRUE(cfg.isOk());
  static const OptionSpec kSpecs[] = {{"timeout", OptionType::kDuration, "30s", 1, 3600000, "total timeout"}};
  EXPECT_FALSE(cfg->pluginOptions(cfg->getPlugin("fetcher"), kSpecs, 1, &problems).isOk());
  EXPECT_THAT(problemLines(problems),
              ::testing::Contains("o.yaml: fetcher.options: a key must be a name (got a list as a key)"));
}

// Enum keys are checked as the file loads (not by hand in lccd): a bad word is one
// problem, `file: key: why`, naming the allowed words.
TEST(Config, EnumKeysRefuseAnyOtherWordNamingTheAllowedOnes) {
  const std::pair<const char*, const char*> kCases[] = {
      {"log:\n  level: trace\n", "e.yaml: log.level: must be debug, info, warn or error (got trace)"},
      {"fetch:\n  redirects: sideways\n", "e.yaml: fetch.redirects: must be prefix, host or none (got sideways)"},
      {"indexnow:\n  register: on_demand\n", "e.yaml: indexnow.register: must be off or auto (got on_demand)"},
      {"tls:\n  min_version: 1.0\n", "e.yaml: tls.min_version: must be 1.2 or 1.3 (got 1.0)"},
      {"uns:\n  password_hash_ops: sensitive\n",
       "e.yaml: uns.password_hash_ops: must be interactive or moderate (got sensitive)"},
  };
  for (const auto& [yaml, want] : kCases) {
    std::vector<ConfigProblem> problems;
    EXPECT_FALSE(Config::loadText(yaml, "e.yaml", {}, &problems).isOk()) << yaml;
    EXPECT_EQ(problemLines(problems), std::vector<std::string>{want}) << yaml;
  }
}

// Every kEnum key of the schema takes each of its words, from the file and from --set,
// and refuses a word that is not one of them; the known enum keys are kEnum.
TEST(Config, EnumKeysAcceptEachAllowedWord) {
  std::set<std::string> enum_keys;
  for (const auto& spec : Config::schema()) {
    if (spec.type != KeyType::kEnum) continue;
    enum_keys.insert(spec.path);
    const std::vector<std::string> words = enumChoices(spec);
    ASSERT_GE(words.size(), 2u) << spec.path;
    for (const auto& word : words) {
      std::vector<ConfigProblem> problems;
      auto cfg = Config::loadText("", "w.yaml", {std::string(spec.path) + "=" + word}, &problems);
      ASSERT_TRUE(cfg.isOk()) << spec.path << "=" << word << ": " << ::testing::PrintToString(problemLines(problems));
      EXPECT_EQ(cfg->getString(spec.path), word);
    }
    std::vector<ConfigProblem> problems;
    EXPECT_FALSE(Config::loadText("", "w.yaml", {std::string(spec.path) + "=nonesuch"}, &problems).isOk());
    ASSERT_EQ(problems.size(), 1u) << spec.path;
    EXPECT_EQ(problems[0].file, "--set") << "a bad --set is blamed on --set, not on the file";
    EXPECT_EQ(problems[0].key, spec.path);
    EXPECT_THAT(problems[0].why, HasSubstr(words.back() + " (got nonesuch)"));
  }
  EXPECT_EQ(enum_keys, (std::set<std::string>{"fetch.redirects", "indexnow.register", "log.level", "tls.min_version",
                                              "uns.password_hash_ops"}));
}

// A problem in a --set is blamed on --set, not on the file (issue 30 §3); the file's own
// problems still name the file.
TEST(Config, ProblemsOfASetAreBlamedOnSet) {
  std::vector<ConfigProblem> problems;
  auto cfg = Config::loadText("uns:\n  max_depth: deep\n", "etc/lcc.yaml",
                              {"log.level=warning", "node.dat_dir=/srv/lcc", "nod.data_dir=/x", "roles=uns"},
                              &problems);
  EXPECT_FALSE(cfg.isOk());
  EXPECT_THAT(problemLines(problems),
              ::testing::UnorderedElementsAre(
                  "--set: log.level: must be debug, info, warn or error (got warning)",
                  "--set: node.dat_dir: unknown key; did you mean node.data_dir?",
                  "--set: nod: unknown key; did you mean node?", "--set: roles: must be a list (got uns)",
                  HasSubstr("etc/lcc.yaml: uns.max_depth: must be an integer")));

  // A plugin's option given by --set.
  problems.clear();
  cfg = Config::loadText("fetcher: fetch-curl\n", "etc/lcc.yaml", {"fetcher.options.timeout=forever"}, &problems);
  ASSERT_TRUE(cfg.isOk()) << ::testing::PrintToString(problemLines(problems));
  static const OptionSpec kSpecs[] = {{"timeout", OptionType::kDuration, "30s", 1, 3600000, "total timeout"}};
  EXPECT_FALSE(cfg->pluginOptions(cfg->getPlugin("fetcher"), kSpecs, 1, &problems).isOk());
  EXPECT_THAT(problemLines(problems), ::testing::ElementsAre(HasSubstr("--set: fetcher.options.timeout: must be a duration")));
  EXPECT_EQ(cfg->sourceOf("fetcher.options.timeout"), "--set");
  EXPECT_EQ(cfg->sourceOf("fetcher"), "etc/lcc.yaml") << "the file names the plugin; --set only its option";
}

// An unknown key gets the nearest key of the schema (a typo, or a key in the wrong
// section); a name near nothing gets no guess.
TEST(Config, UnknownKeysGetDidYouMean) {
  std::vector<ConfigProblem> problems;
  auto cfg = Config::loadText(
      "node:\n  dat_dir: /x\nlog:\n  levle: info\nuns:\n  machine_id: m\nlisten:\n  htpp: 127.0.0.1:1\n"
      "zzzzzz: 1\nstorage:\n  queue: {plugin: storage-kyoto, optoins: {}}\n",
      "t.yaml", {}, &problems);
  EXPECT_FALSE(cfg.isOk());
  EXPECT_THAT(problemLines(problems),
              ::testing::UnorderedElementsAre("t.yaml: node.dat_dir: unknown key; did you mean node.data_dir?",
                                              "t.yaml: log.levle: unknown key; did you mean log.level?",
                                              "t.yaml: uns.machine_id: unknown key; did you mean node.machine_id?",
                                              "t.yaml: listen.htpp: unknown key; did you mean listen.http?",
                                              "t.yaml: zzzzzz: unknown key",
                                              "t.yaml: storage.queue.optoins: unknown key; did you mean options?"));
  problems.clear();
  cfg = Config::loadText("fetcher:\n  plugin: fetch-curl\n  options:\n    max_szie: 1\n", "o.yaml", {}, &problems);
  ASSERT_TRUE(cfg.isOk());
  static const OptionSpec kSpecs[] = {{"max_size", OptionType::kSize, "50MiB", 1, 1LL << 40, "cap"}};
  EXPECT_FALSE(cfg->pluginOptions(cfg->getPlugin("fetcher"), kSpecs, 1, &problems).isOk());
  EXPECT_THAT(problemLines(problems),
              ::testing::ElementsAre(
                  "o.yaml: fetcher.options.max_szie: unknown option of plugin fetch-curl; did you mean max_size?"));
}

// Config::load of a file that is not there names the absolute path it tried and why.
TEST(Config, AMissingFileIsNamedWithItsAbsolutePath) {
  std::vector<ConfigProblem> problems;
  EXPECT_FALSE(Config::load("no/such/lcc.yaml", {}, &problems).isOk());
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_THAT(problems[0].toString(), HasSubstr("no/such/lcc.yaml: cannot open the file (" +
                                                Config::absolutePath("no/such/lcc.yaml") +
                                                "): No such file or directory"));
}

TEST(Suggest, EditDistanceCountsASwapOnce) {
  EXPECT_EQ(editDistance("level", "levle"), 1u);
  EXPECT_EQ(editDistance("", "abc"), 3u);
  EXPECT_EQ(editDistance("data_dir", "dat_dir"), 1u);
  EXPECT_EQ(editDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(closestName("ab", {"xy"}), std::nullopt);
  EXPECT_EQ(closestName("abcdef.x", {"zzzzzz.x", "yyyyyy.x"}), std::nullopt) << "two sections have it: no guess";
}

// Config::defaults() is what the schema says: each key given explicitly at its
// default's spelling loads to the same values, and none counts as set.
TEST(Config, DefaultsAreTheSchemasDefaults) {
  const Config defaults = Config::defaults();
  EXPECT_EQ(defaults.file(), "");
  std::vector<std::string> every_key;
  for (const auto& spec : Config::schema()) {
    EXPECT_FALSE(defaults.isSet(spec.path)) << spec.path;
    const bool list = spec.type == KeyType::kStringList || spec.type == KeyType::kPluginList;
    if (std::string(spec.default_value).empty()) continue;  // "key=" would not set it
    every_key.push_back(std::string(spec.path) + "=" + (list ? "[" : "") + spec.default_value + (list ? "]" : ""));
  }
  std::vector<ConfigProblem> problems;
  auto explicit_cfg = Config::loadText("", "x.yaml", every_key, &problems);
  ASSERT_TRUE(explicit_cfg.isOk()) << ::testing::PrintToString(problemLines(problems));
  EXPECT_EQ(defaults.dump(), explicit_cfg->dump());
  EXPECT_EQ(defaults.getInt("qm.max_retries"), 3);
  EXPECT_EQ(defaults.getInt("qm.retry_delay"), 60'000);
  EXPECT_EQ(defaults.getString("log.level"), "info");
}

}  // namespace
}  // namespace lcc
