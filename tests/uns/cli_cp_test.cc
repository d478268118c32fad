// `lcc cp send` and `lcc cp scan`, run as the real program (LCC_BIN_DIR/lcc) against
// a UNS in this process and a fake QM.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "common/md5.h"
#include "support/temp_dir.h"
#include "uns/uns_test_util.h"

namespace lcc::uns {
namespace {

using namespace lcc::uns::testing;
using lcc::testing::TempDir;

struct ProgramRun {
  int code = -1;
  std::string out;
};

// Runs `lcc ARGS` (shell-quoted by the caller) with stdin from `stdin_file` (or /dev/null).
ProgramRun lcc(const std::string& args, const std::string& stdin_file = "/dev/null") {
  std::string cmd = std::string(LCC_BIN_DIR) + "/lcc " + args + " < " + stdin_file + " 2>/dev/null";
  ProgramRun r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

void writeFile(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

class CliCpTest : public ::testing::Test {
 protected:
  lcc::testing::SimClock sim_;
  ProviderFixture fx_{goldenProviders(sim_.now())};
  TempDir dir_;
};

TEST_F(CliCpTest, SendUrlLinesPrintsErrorsThenAccepted) {
  FakeQm qm;
  Harness h(testOptions(dir_.path(), qm.port()), fx_.store());
  ASSERT_TRUE(h.start().isOk());
  writeFile(dir_.file("urls.txt"),
            "<url c=\"a.htm\" m=\"text/html\"/>\n"
            "<url c=\"logo.gif\" m=\"image/gif\"/>\n"
            "<url c=\"b.htm\" m=\"text/html\" op=\"delete\"/>\n");
  ProgramRun r = lcc("cp send --uns 127.0.0.1:" + std::to_string(h.port()) +
                  " --id 1 --password s3cret --urlprefix http://www.server.com/ " + dir_.file("urls.txt"));
  // A refused URL: exit 4 and the count per code (issue 29; it was exit 0).
  EXPECT_EQ(r.code, 4) << r.out;
  EXPECT_NE(r.out.find("error 203 http://www.server.com/logo.gif (image/gif): mime type not accepted\n"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("accepted 2 of 3 urls\nrefused 1 urls (203: 1)\n"), std::string::npos) << r.out;
  // The provider's fetch errors reported at init are shown too.
  EXPECT_NE(r.out.find("fetch errors since the last connection: 2"), std::string::npos) << r.out;
  ASSERT_TRUE(qm.waitApplied(1));
  EXPECT_EQ(qm.applied()[0].urls.size(), 2u);
  EXPECT_EQ(qm.applied()[0].urls[0].key.url, "http://www.server.com/a.htm");
}

TEST_F(CliCpTest, SendAWholeSetFromStdinAndExitCodes) {
  FakeQm qm;
  Harness h(testOptions(dir_.path(), qm.port()), fx_.store());
  ASSERT_TRUE(h.start().isOk());
  const std::string uns = "--uns 127.0.0.1:" + std::to_string(h.port());
  writeFile(dir_.file("set.xml"),
            "<?xml version=\"1.0\"?>\n<lococa:set xmlns:lococa=\"http://www.lococa.org/1.0\" set=\"full\" "
            "urlprefix=\"https://three.net/\"><url c=\"x.htm\" m=\"text/html\"/></lococa:set>\n");
  ProgramRun ok = lcc("cp send " + uns + " --id 3 --password s3cret", dir_.file("set.xml"));
  EXPECT_EQ(ok.code, 0) << ok.out;
  ASSERT_TRUE(qm.waitApplied(1));
  EXPECT_EQ(qm.applied()[0].header.kind, SetKind::kFull);
  EXPECT_EQ(qm.applied()[0].urls[0].key.url, "https://three.net/x.htm");
  // Provider 4 used up its full sets in this period (the UNS runs on the system clock):
  // rejected, exit 1.
  ASSERT_TRUE(fx_.store()->modify(4, [](ProviderRecord& p) {
    p.fullset_period_start = fromUnixMillis(std::chrono::duration_cast<Millis>(
        std::chrono::system_clock::now().time_since_epoch()).count());
    return Status::ok();
  }).isOk());
  ProgramRun no = lcc("cp send " + uns + " --id 4 --password s3cret --full", dir_.file("set.xml"));
  EXPECT_EQ(no.code, 1) << no.out;
  EXPECT_NE(no.out.find("rejected 131"), std::string::npos) << no.out;
  // Wrong password: exit 1.
  ProgramRun bad = lcc("cp send " + uns + " --id 1 --password nope", dir_.file("set.xml"));
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.out.find("init rejected 110"), std::string::npos) << bad.out;
  // Nobody listening: exit 2. Missing option: exit 2.
  EXPECT_EQ(lcc("cp send --uns 127.0.0.1:" + std::to_string(unusedPort()) + " --id 1 --password x").code, 2);
  EXPECT_EQ(lcc("cp send --id 1 --password x").code, 2);
}

TEST_F(CliCpTest, ScanPrintsFilesThenOnlyChangesWithState) {
  const std::string site = dir_.file("site");
  ASSERT_EQ(::mkdir(site.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((site + "/docs").c_str(), 0755), 0);
  writeFile(site + "/index.html", "<html>hello</html>");
  writeFile(site + "/docs/report.pdf", "%PDF-1.4 fake");
  writeFile(site + "/docs/my notes.weird", "x");
  writeFile(dir_.file("mime.types"), "# mine\ntext/x-weird weird .WEIRD\n");
  const std::string state = dir_.file("scan.state");
  const std::string args = "cp scan " + site + " --base-url http://www.server.com/ --mime-map " +
                           dir_.file("mime.types") + " --state " + state;
  ProgramRun first = lcc(args);
  ASSERT_EQ(first.code, 0);
  EXPECT_NE(first.out.find("<url c=\"http://www.server.com/index.html\" m=\"text/html\" sz=\"18\" md5=\"" +
                           Md5::of("<html>hello</html>") + "\" mt=\""),
            std::string::npos)
      << first.out;
  EXPECT_NE(first.out.find("c=\"http://www.server.com/docs/report.pdf\" m=\"application/pdf\""), std::string::npos);
  EXPECT_NE(first.out.find("c=\"http://www.server.com/docs/my%20notes.weird\" m=\"text/x-weird\""), std::string::npos)
      << first.out;
  // Every line is a <url/> element.
  std::istringstream lines(first.out);
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    EXPECT_EQ(line.rfind("<url ", 0), 0u) << line;
    ++count;
  }
  EXPECT_EQ(count, 3);
  struct stat st;
  ASSERT_EQ(::stat(state.c_str(), &st), 0);
  EXPECT_FALSE(::stat((state + ".tmp").c_str(), &st) == 0);  // written through a temporary and renamed

  // Nothing changed: nothing printed.
  ProgramRun again = lcc(args);
  EXPECT_EQ(again.code, 0);
  EXPECT_EQ(again.out, "");

  // One changed, one removed, one added.
  writeFile(site + "/index.html", "<html>hello again</html>");
  ASSERT_EQ(::unlink((site + "/docs/report.pdf").c_str()), 0);
  writeFile(site + "/new.txt", "new");
  ProgramRun third = lcc(args);
  EXPECT_EQ(third.code, 0);
  EXPECT_NE(third.out.find("c=\"http://www.server.com/index.html\" m=\"text/html\" sz=\"24\""), std::string::npos)
      << third.out;
  EXPECT_NE(third.out.find("<url c=\"http://www.server.com/docs/report.pdf\" m=\"application/pdf\" op=\"delete\"/>"),
            std::string::npos)
      << third.out;
  EXPECT_NE(third.out.find("c=\"http://www.server.com/new.txt\" m=\"text/plain\""), std::string::npos) << third.out;
  EXPECT_EQ(third.out.find("my%20notes"), std::string::npos);
  // The removal is remembered: not reported twice.
  EXPECT_EQ(lcc(args).out, "");
  EXPECT_EQ(lcc("cp scan " + dir_.file("nope") + " --base-url http://x/").code, 2);
}

TEST_F(CliCpTest, ScanOutputFeedsSend) {
  FakeQm qm;
  Harness h(testOptions(dir_.path(), qm.port()), fx_.store());
  ASSERT_TRUE(h.start().isOk());
  const std::string site = dir_.file("site");
  ASSERT_EQ(::mkdir(site.c_str(), 0755), 0);
  for (int i = 0; i < 20; ++i) writeFile(site + "/p" + std::to_string(i) + ".html", "page " + std::to_string(i));
  ProgramRun scan = lcc("cp scan " + site + " --base-url http://www.server.com/site");
  ASSERT_EQ(scan.code, 0);
  writeFile(dir_.file("scan.out"), scan.out);
  ProgramRun send = lcc("cp send --uns 127.0.0.1:" + std::to_string(h.port()) + " --id 1 --password s3cret -",
                 dir_.file("scan.out"));
  EXPECT_EQ(send.code, 0) << send.out;
  EXPECT_NE(send.out.find("accepted 20 of 20 urls"), std::string::npos) << send.out;
  ASSERT_TRUE(qm.waitApplied(1));
  EXPECT_EQ(qm.applied()[0].urls.size(), 20u);
  EXPECT_EQ(qm.applied()[0].urls[0].md5, Md5::of("page 0"));
}

}  // namespace
}  // namespace lcc::uns
