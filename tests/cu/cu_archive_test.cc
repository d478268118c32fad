// The tar.gz answer read by the tools content users have: GNU tar (list and extract)
// and Python's tarfile (Debian 12's, without extraction filters), on records with
// hostile URLs; every extracted file stays inside the target folder and holds exactly
// the stored bytes. The XML answers also go through Python's namespace-aware parser.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "cu_test_util.h"

namespace lcc {
namespace {

namespace fs = std::filesystem;
using cutest::CuWorld;
using proto::CuQuery;

int run(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()); }

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void spit(const fs::path& p, const std::string& data) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(data.data(), static_cast<std::streamsize>(data.size()));
}

std::string quote(const std::string& s) { return "'" + s + "'"; }

// Regular files under `root`, relative; fails on anything that is not a file or folder.
std::set<std::string> filesUnder(const fs::path& root, std::string* error) {
  std::set<std::string> out;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    if (it->is_symlink()) *error = "symlink " + it->path().string();
    if (it->is_regular_file()) out.insert(fs::relative(it->path(), root).string());
  }
  return out;
}

class ArchiveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937 rng(99);
    const std::vector<std::string> nasty = {"../", "..", "/../../etc/", "%2e%2e/", "a b", "\\..\\", "?x=../..", "#frag",
                                            "docs/", "docs", "docs/index.html", "\xc3\xa9t\xc3\xa9", "\x01\x1f",
                                            "\xff\xfe", "$(touch pwned)", "'q'", "\"d\"", "(index)", "[d]", "CON",
                                            std::string(300, 'L'), "x.html/", "x.html", "//", "./", "~"};
    for (int i = 0; i < 400; ++i) {
      std::string url = std::vector<std::string>{"http://h.org/", "https://h.org:8443/", "http://[::1]:8080/", "http://h.org"}[rng() % 4];
      for (int k = rng() % 4; k >= 0; --k) url += nasty[rng() % nasty.size()];
      url += std::to_string(i % 50 == 0 ? 0 : i);  // some identities differ only by MIME type
      const std::string mime = i % 7 == 0 ? "text/plain" : "text/html";
      std::string content;
      for (int k = 0; k < 1 + static_cast<int>(rng() % 3000); ++k) content.push_back(static_cast<char>(rng()));
      if (!ids_.insert(std::make_pair(url, mime)).second) continue;
      auto r = w_.put(1 + rng() % 3, url, mime, content);
      expected_[r.seq] = content;
      first_ = r;
    }
    engine_ = w_.makeEngine();
    out_ = fs::path(w_.dataDir()) / "out";
    fs::create_directories(out_);
  }

  CuWorld w_;
  std::unique_ptr<cu::QueryEngine> engine_;
  std::set<std::pair<std::string, std::string>> ids_;
  std::map<ChangeSeq, std::string> expected_;  // by seq: the manifest's c may be percent-repaired
  ContentRecord first_;
  fs::path out_;
};

TEST_F(ArchiveTest, GnuTarAndPythonTarfileReadEveryByte) {
  CuQuery q;
  q.format = "tar.gz";
  Status s;
  const std::string gz = cutest::runQuery(*engine_, q, &s);
  ASSERT_TRUE(s.isOk()) << s.toString();
  const fs::path archive = out_ / "export.tar.gz";
  spit(archive, gz);
  auto t = cutest::parseTarAnswer(gz);
  ASSERT_TRUE(t.ok) << t.error;
  ASSERT_EQ(t.manifest.urls.size(), expected_.size());

  // GNU tar lists every member and extracts without a complaint.
  const fs::path gnu = out_ / "gnu", py = out_ / "py";
  fs::create_directories(gnu);
  fs::create_directories(py);
  ASSERT_EQ(std::system(("tar tzf " + quote(archive.string()) + " > " + quote((out_ / "list.txt").string())).c_str()), 0);
  std::string list = slurp(out_ / "list.txt");
  EXPECT_EQ(static_cast<std::size_t>(std::count(list.begin(), list.end(), '\n')), expected_.size() + 1);
  ASSERT_EQ(run("tar xzf " + quote(archive.string()) + " -C " + quote(gnu.string())), 0);

  // Python's tarfile (no extraction filters on Debian 12) extracts it too.
  ASSERT_EQ(run(std::string(LCC_PYTHON) + " -c 'import sys,tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' " +
                quote(archive.string()) + " " + quote(py.string())),
            0);

  std::set<std::string> want = {"MANIFEST.xml"};
  for (const auto& u : t.manifest.urls) {
    const std::string path = u.attr("path");
    ASSERT_FALSE(path.empty()) << u.attr("c");
    want.insert(path);
    const std::string& content = expected_.at(std::stoull(u.attr("seq")));
    EXPECT_EQ(slurp(gnu / path), content) << path;
    EXPECT_EQ(slurp(py / path), content) << path;
  }
  std::string err;
  EXPECT_EQ(filesUnder(gnu, &err), want);
  EXPECT_EQ(filesUnder(py, &err), want);
  EXPECT_TRUE(err.empty()) << err;
  EXPECT_FALSE(fs::exists(fs::path(w_.dataDir()) / "etc")) << "something escaped";
  EXPECT_EQ(slurp(gnu / "MANIFEST.xml"), t.members.back().data);
}

TEST_F(ArchiveTest, PythonNamespaceAwareParsersReadTheXmlAnswers) {
  CuQuery q;
  q.content = true;
  q.deleted = true;
  w_.remove(first_.key.pid, first_.key.url, first_.key.mime);
  const std::string xml = cutest::runQuery(*engine_, q);
  spit(out_ / "answer.xml", xml);
  q.format = "tar.gz";
  spit(out_ / "a.tar.gz", cutest::runQuery(*engine_, q));
  const std::string script = R"PY(
import base64, sys, tarfile, xml.etree.ElementTree as ET, xml.dom.minidom
NS = "{http://www.lococa.org/1.0}"
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == NS + "result", root.tag
urls = root.findall("url")
assert len(urls) == int(root.get("count")), (len(urls), root.get("count"))
stored = [u for u in urls if u.get("deleted") != "yes"]
for u in stored:
    c = u.find("content")
    assert c is not None and c.get("encoding") == "base64"
    assert len(base64.b64decode(c.text or "")) == int(u.get("sz"))
assert len(stored) == len(urls) - 1
with tarfile.open(sys.argv[2]) as t:
    m = t.extractfile("MANIFEST.xml").read()
doc = xml.dom.minidom.parseString(m)
assert doc.documentElement.namespaceURI == "http://www.lococa.org/1.0"
assert doc.documentElement.localName == "result"
mroot = ET.fromstring(m)
assert len(mroot.findall("url")) == len(urls)
print("ok")
)PY";
  spit(out_ / "check.py", script);
  EXPECT_EQ(run(std::string(LCC_PYTHON) + " " + quote((out_ / "check.py").string()) + " " +
                quote((out_ / "answer.xml").string()) + " " + quote((out_ / "a.tar.gz").string())),
            0)
      << "run: python3 " << (out_ / "check.py") << " " << (out_ / "answer.xml") << " " << (out_ / "a.tar.gz");
}

}  // namespace
}  // namespace lcc
