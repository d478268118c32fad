// `lcc cu mirror` (core/app/cu_mirror.h) against a stand-in CU port on 127.0.0.1 that
// answers scripted XML: hostile URL paths never leave DIR, removals are applied, a 150
// answer (changes purged) makes a full resync that removes what the LCC no longer holds,
// the lock keeps two runs apart, and a broken answer leaves no half file and the cursor
// where it was.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <thread>

#include "app/cu_mirror.h"
#include "common/posix_env.h"
#include "lcc/support/cu_xml_format.h"
#include "support/loopback.h"
#include "support/temp_dir.h"

namespace lcc {
namespace {
namespace fs = std::filesystem;

// One record of a scripted answer.
struct Rec {
  std::uint64_t seq;
  std::string url;
  std::string body;  // ignored when deleted
  bool deleted = false;
  std::string mime = "text/html";
  std::string md5 = "";  // the md5 attribute, when not empty
};

std::string answer(std::uint64_t last_seq, const std::vector<Rec>& recs, std::uint64_t count = ~0ULL) {
  std::string out = proto::resultStartTag(count == ~0ULL ? recs.size() : count, last_seq);
  for (const Rec& r : recs) {
    out += "<url seq=\"" + std::to_string(r.seq) + "\" pid=\"1\" c=\"";
    proto::appendXmlUrl(out, r.url);
    out += "\" m=\"" + r.mime + "\"";
    if (r.deleted) {
      out += " deleted=\"yes\" stored=\"2024-05-01T12:00:00Z\"/>\n";
      continue;
    }
    if (!r.md5.empty()) out += " md5=\"" + r.md5 + "\"";
    out += " sz=\"" + std::to_string(r.body.size()) + "\" stored=\"2024-05-01T12:00:00Z\"><content encoding=\"base64\">";
    proto::Base64Encoder enc;
    enc.update(r.body.data(), r.body.size(), out);
    enc.finish(out);
    out += "</content></url>\n";
  }
  return out + std::string(proto::kResultEndTag);
}

std::string rejected(int code, const std::string& why) {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<lococa:query_rejected xmlns:lococa=\"http://www.lococa.org/1.0\">"
         "<reason code=\"" + std::to_string(code) + "\">" + why + "</reason></lococa:query_rejected>\n";
}

// A CU port that reads one query per connection and writes what `answer_for` returns.
class FakeCu {
 public:
  explicit FakeCu(std::function<std::string(const std::string&)> answer_for) : answer_for_(std::move(answer_for)) {
    fd_ = testing::listenLoopback(&port_);
    EXPECT_GE(fd_, 0);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeCu() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  capi::Endpoint endpoint() const { return {"127.0.0.1", port_, false}; }
  std::vector<std::string> queries() {
    std::lock_guard<std::mutex> l(mu_);
    return queries_;
  }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) continue;
      std::string q;
      char buf[4096];
      // Bounded: a query is small, and the client's reads time out.
      while (q.find("</lococa:query>") == std::string::npos && q.size() < 65536) {
        pollfd cp{c, POLLIN, 0};
        if (::poll(&cp, 1, 10000) <= 0) break;
        const ssize_t n = ::read(c, buf, sizeof buf);
        if (n <= 0) break;
        q.append(buf, static_cast<std::size_t>(n));
      }
      {
        std::lock_guard<std::mutex> l(mu_);
        queries_.push_back(q);
      }
      const std::string a = answer_for_(q);
      for (std::size_t off = 0; off < a.size();) {
        const ssize_t n = ::send(c, a.data() + off, a.size() - off, MSG_NOSIGNAL);
        if (n <= 0) break;
        off += static_cast<std::size_t>(n);
      }
      ::shutdown(c, SHUT_WR);
      ::close(c);
    }
  }

  std::function<std::string(const std::string&)> answer_for_;
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::string> queries_;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every regular file and link under `root`, relative.
std::set<std::string> filesUnder(const std::string& root) {
  std::set<std::string> out;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    if (!it->is_directory()) out.insert(it->path().string().substr(root.size() + 1));
  }
  return out;
}

mirror::Report run(const FakeCu& cu, const std::string& dir, bool full = false, std::uint64_t batch = 10000) {
  mirror::Options o;
  o.dir = dir;
  o.endpoint = cu.endpoint();
  o.timeout_ms = 20000;
  o.providers = {1};
  o.full = full;
  o.batch = batch;
  return mirror::runMirror(o, posixEnv(), mirror::Callbacks{});
}

const std::string kHost = "http://127.0.0.1:8000";

TEST(CuMirrorPath, RefusesUnsafeRelativePaths) {
  using mirror::isSafeRelativePath;
  EXPECT_TRUE(isSafeRelativePath("1/h/docs/a.html"));
  for (std::string_view bad : {"", "/etc/passwd", "../x", "1/../../x", "1/./x", "1//x", "1/x/", "..", "."}) {
    EXPECT_FALSE(isSafeRelativePath(bad)) << bad;
  }
  EXPECT_FALSE(isSafeRelativePath(std::string_view("1/a\0b", 5)));
  EXPECT_FALSE(isSafeRelativePath("1/" + std::string(256, 'a')));
  EXPECT_FALSE(isSafeRelativePath(std::string(2049, 'a')));
}

std::vector<std::string> hostileUrls() {
  std::vector<std::string> v = {
      kHost + "/../../etc/passwd", kHost + "/a/%2E%2E/%2E%2E/%2e%2e/x", kHost + "//etc//passwd",
      kHost + "/a%2Fb%2F..%2F..%2Fc", kHost + "/" + std::string(5000, 'a'), kHost + "/a/" + std::string(300, 'b') + "/c",
      kHost + "/..", kHost + "/.", kHost + "/./././", kHost + "/a/../../..", "file:///etc/passwd",
      "http://../x", "http:///x", "not a url at all", "", kHost + "/..\\..\\x", kHost + "/%00/x", kHost + "/a?x=../../y",
      kHost + "/a#/../../z", kHost + "/.lcc-mirror", kHost + "/.lcc-mirror^part", kHost + "/docs/",
      kHost + "/docs", "http://h/" + std::string(3000, '/')};
  v.push_back(kHost + std::string("/nul\0byte/..", 12));
  std::string deep = kHost;
  for (int i = 0; i < 400; ++i) deep += "/d" + std::to_string(i);
  v.push_back(deep);
  return v;
}

TEST(CuMirrorPath, HostileUrlsMapInsideTheProvidersFolder) {
  std::set<std::string> seen;
  for (const std::string& url : hostileUrls()) {
    auto rel = mirror::mirrorPath(7, url, "text/html");
    ASSERT_TRUE(rel.isOk()) << url << ": " << rel.status().toString();
    EXPECT_TRUE(mirror::isSafeRelativePath(*rel)) << *rel;
    EXPECT_EQ(rel->rfind("7/", 0), 0u) << *rel;
    EXPECT_TRUE(seen.insert(*rel).second) << "two URLs on one path: " << *rel;
  }
}

// The hostile URLs through a real answer: every file lands under DIR, one per URL, and
// nothing is made beside DIR.
TEST(CuMirror, HostileUrlsAreWrittenOnlyUnderDir) {
  testing::TempDir tmp;
  const std::string dir = tmp.file("m");
  std::vector<Rec> recs;
  std::uint64_t seq = 0;
  for (const std::string& url : hostileUrls()) recs.push_back({++seq, url, "body " + std::to_string(seq)});
  FakeCu cu([&](const std::string&) { return answer(seq, recs); });
  const auto r = run(cu, dir);
  ASSERT_EQ(r.outcome, mirror::Outcome::kOk) << r.message;
  EXPECT_EQ(r.stats.written, recs.size());
  const auto outside = filesUnder(tmp.path());
  for (const auto& f : outside) EXPECT_EQ(f.rfind("m/", 0), 0u) << "written outside DIR: " << f;
  std::set<std::string> bodies;
  for (const auto& f : filesUnder(dir)) {
    if (f.rfind(".lcc-mirror", 0) == 0) continue;
    EXPECT_EQ(f.rfind("1/", 0), 0u) << f;
    bodies.insert(slurp(dir + "/" + f));
  }
  EXPECT_EQ(bodies.size(), recs.size());
}

// A link planted under the part file's name (by anyone who can write into DIR) is removed,
// never written through: the body lands under DIR and the link's target is untouched.
TEST(CuMirror, ALinkAtThePartNameIsNotFollowed) {
  testing::TempDir tmp;
  const std::string dir = tmp.file("m");
  const std::string site = dir + "/1/127.0.0.1+8000";
  fs::create_directories(site);
  const std::string target = tmp.file("outside");
  { std::ofstream(target) << "untouched"; }
  fs::create_symlink(target, site + "/.lcc-mirror^part");
  FakeCu cu([&](const std::string&) { return answer(1, {{1, kHost + "/a.html", "A1"}}); });
  const auto r = run(cu, dir);
  ASSERT_EQ(r.outcome, mirror::Outcome::kOk) << r.message;
  EXPECT_EQ(slurp(target), "untouched");
  EXPECT_EQ(slurp(site + "/a.html"), "A1");
  EXPECT_FALSE(fs::is_symlink(site + "/a.html"));
}

TEST(CuMirror, AppliesChangesAndRemovalsFromTheCursor) {
  testing::TempDir tmp;
  const std::string dir = tmp.file("m");
  int turn = 0;
  FakeCu cu([&](const std::string&) {
    if (turn++ == 0) return answer(3, {{1, kHost + "/a.html", "A1"}, {2, kHost + "/b.html", "B1"}, {3, kHost + "/c.txt", "C1", false, "text/plain"}});
    return answer(6, {{4, kHost + "/a.html", "A2"}, {5, kHost + "/b.html", "", true}, {6, kHost + "/d/e.html", "E1"}});
  });
  auto r = run(cu, dir);
  ASSERT_EQ(r.outcome, mirror::Outcome::kOk) << r.message;
  EXPECT_TRUE(r.stats.full);
  const std::string site = dir + "/1/127.0.0.1+8000/";
  EXPECT_EQ(slurp(site + "b.html"), "B1");
  EXPECT_EQ(slurp(dir + "/.lcc-mirror").substr(0, 22), "lcc-cu-mirror 1\nseq 3\n");

  r = run(cu, dir);
  ASSERT_EQ(r.outcome, mirror::Outcome::kOk) << r.message;
  EXPECT_FALSE(r.stats.full) << r.stats.why_full;
  EXPECT_EQ(r.stats.from_seq, 3u);
  EXPECT_EQ(r.stats.to_seq, 6u);
  const auto queries = cu.queries();
  ASSERT_EQ(queries.size(), 2u);
  EXPECT_EQ(queries[0].find("<since"), std::string::npos) << queries[0];
  EXPECT_NE(queries[1].find("<since seq=\"3\"/>"), std::string::npos) << queries[1];
  EXPECT_NE(queries[1].find("<deleted>yes</deleted>"), std::string::npos) << queries[1];
  EXPECT_EQ(slurp(site + "a.html"), "A2");
  EXPECT_FALSE(fs::exists(site + "b.html")) << "the removal was not applied";
  EXPECT_EQ(slurp(site + "c.txt"), "C1");
  EXPECT_EQ(slurp(site + "d/e.html"), "E1");
  EXPECT_EQ(filesUnder(dir + "/1"),
            (std::set<std::string>{"127.0.0.1+8000/a.html", "127.0.0.1+8000/c.txt", "127.0.0.1+8000/d/e.html"}));
}

// The LCC purged tombstones past the cursor (150): the mirror takes everything again and
// removes the files of URLs the LCC no longer holds, whose removals it never saw.
TEST(CuMirror, PurgeHorizonMakesAFullResyncThatRemovesWhatIsGone) {
  testing::TempDir tmp;
  const std::string dir = tmp.file("m");
  bool purged = false;
  FakeCu cu([&](const std::string& q) {
    if (!purged) return answer(3, {{1, kHost + "/a.html", "A1"}, {2, kHost + "/b.html", "B1"}, {3, kHost + "/x/c.html", "C1"}});
    if (q.find("<since") != std::string::npos) return rejected(150, "changes before seq 9 were purged; take a full export");
    return answer(10, {{10, kHost + "/a.html", "A2"}});
  });
  ASSERT_EQ(run(cu, dir).outcome, mirror::Outcome::kOk);
  // A stray file of the mirror's own tree (an old run's) goes too; a file beside the
  // providers' folders (an index) stays.
  std::ofstream(dir + "/1/127.0.0.1+8000/x/old.html") << "old";
  std::ofstream(dir + "/index.swish++") << "kept";
  purged = true;
  const auto r = run(cu, dir);
  ASSERT_EQ(r.outcome, mirror::Outcome::kOk) << r.message;
  EXPECT_TRUE(r.stats.full);
  EXPECT_NE(r.stats.why_full.find("purged"), std::string::npos) << r.stats.why_full;
  EXPECT_EQ(r.stats.to_seq, 10u);
  EXPECT_EQ(filesUnder(dir + "/1"), (std::set<std::string>{"127.0.0.1+8000/a.html"}));
  EXPECT_FALSE(fs::exists(dir + "/1/127.0.0.1+8000/x")) << "an emptied folder stays";
  EXPECT_EQ(slurp(dir + "/1/127.0.0.1+8000/a.html"), "A2");
  EXPECT_EQ(slurp(dir + "/index.swish++"), "kept");
  EXPECT_EQ(slurp(dir + "/.lcc-mirror").substr(0, 23), "lcc-cu-mirror 1\nseq 10\n");
  const auto queries = cu.queries();
  ASSERT_EQ(queries.size(), 3u);
  EXPECT_EQ(queries[2].find("<since"), std::string::npos) << queries[2];
}

// Batches: the cursor follows each answer cut by the limit, and a full resync spread
// over batches still removes only what none of them held.
TEST(CuMirror, BatchesFollowLastSeq) {
  testing::TempDir tmp;
  const std::string dir = tmp.file("m");
  FakeCu cu([&](const std::string& q) {
    if (q.find("<since") == std::string::npos) return answer(2, {{1, kHost + "/1.html", "1"}, {2, kHost + "/2.html", "2"}}, 2);
    if (q.find("seq=\"2\"") != std::string::npos) return answer(4, {{3, kHost + "/3.html", "3"}, {4, kHost + "/4.html", "4"}}, 2);
    return answer(5, {{5, kHost + "/5.html", "5"}});
  });
  const auto r = run(cu, dir, false, 2);
  ASSERT_EQ(r.outcome, mirror::Outcome::kOk) << r.message;
  EXPECT_EQ(r.stats.to_seq, 5u);
  EXPECT_EQ(filesUnder(dir + "/1").size(), 5u);
  EXPECT_EQ(cu.queries().size(), 3u);
}

TEST(CuMirror, ASecondRunWaitsForNoLockAndChangesNothing) {
  testing::TempDir tmp;
  const std::string dir = tmp.file("m");
  fs::create_directories(dir);
  const int fd = ::open((dir + "/.lcc-mirror.lock").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  FakeCu cu([&](const std::string&) { return answer(1, {{1, kHost + "/a.html", "A"}}); });
  const auto r = run(cu, dir);
  ::close(fd);
  EXPECT_EQ(r.outcome, mirror::Outcome::kLocked);
  EXPECT_TRUE(cu.queries().empty());
  EXPECT_FALSE(fs::exists(dir + "/1"));
}

// An answer that ends in the middle of a record's content: that file is not written
// (its old bytes stay), and the cursor stays where it was.
TEST(CuMirror, ABrokenAnswerLeavesNoHalfFileAndTheCursor) {
  testing::TempDir tmp;
  const std::string dir = tmp.file("m");
  int turn = 0;
  FakeCu cu([&](const std::string&) {
    if (turn++ == 0) return answer(1, {{1, kHost + "/a.html", "A1"}});
    std::string a = answer(3, {{2, kHost + "/b.html", "B1"}, {3, kHost + "/a.html", std::string(100000, 'z')}});
    return a.substr(0, a.size() - 50000);
  });
  ASSERT_EQ(run(cu, dir).outcome, mirror::Outcome::kOk);
  const auto r = run(cu, dir);
  EXPECT_EQ(r.outcome, mirror::Outcome::kFailed);
  EXPECT_EQ(slurp(dir + "/1/127.0.0.1+8000/a.html"), "A1");
  EXPECT_EQ(slurp(dir + "/.lcc-mirror").substr(0, 22), "lcc-cu-mirror 1\nseq 1\n");
}

// Content that is not the record's md5 (a body the LCC zero-filled) is not kept: the old
// copy goes too, the run says so and exits 1, and the cursor moves (a later change of
// that URL, or --full, brings it).
TEST(CuMirror, ContentThatIsNotItsMd5IsNotKept) {
  testing::TempDir tmp;
  const std::string dir = tmp.file("m");
  int turn = 0;
  FakeCu cu([&](const std::string&) {
    if (turn++ == 0) {
      return answer(2, {{1, kHost + "/a.html", "A1", false, "text/html", "1d8e1e2d4cfb0b8bb3d85a3bb6e4b5a1"},
                        {2, kHost + "/b.html", "hello", false, "text/html", "5D41402ABC4B2A76B9719D911017C592"}});
    }
    return answer(3, {{3, kHost + "/b.html", std::string(5, '\0'), false, "text/html", "5d41402abc4b2a76b9719d911017c592"}});
  });
  std::vector<std::string> warnings;
  mirror::Options o;
  o.dir = dir;
  o.endpoint = cu.endpoint();
  o.timeout_ms = 20000;
  mirror::Callbacks cb;
  cb.warn = [&](const std::string& m) { warnings.push_back(m); };
  auto r = mirror::runMirror(o, posixEnv(), cb);
  EXPECT_EQ(r.outcome, mirror::Outcome::kFailed);
  EXPECT_EQ(filesUnder(dir + "/1"), (std::set<std::string>{"127.0.0.1+8000/b.html"}));  // md5 of "hello", any case
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("a.html: content does not match its md5"), std::string::npos) << warnings[0];
  r = mirror::runMirror(o, posixEnv(), cb);
  EXPECT_EQ(r.outcome, mirror::Outcome::kFailed);
  EXPECT_EQ(r.stats.to_seq, 3u);
  EXPECT_TRUE(filesUnder(dir + "/1").empty()) << "zero-filled content kept, or the old copy left";
}

TEST(CuMirror, AStoreWhoseSeqWentBackIsTakenAgain) {
  testing::TempDir tmp;
  const std::string dir = tmp.file("m");
  int turn = 0;
  FakeCu cu([&](const std::string&) {
    if (turn++ == 0) return answer(50, {{50, kHost + "/a.html", "A1"}});
    return answer(2, {{2, kHost + "/b.html", "B1"}});  // a new store: seq 2 < 50
  });
  ASSERT_EQ(run(cu, dir).outcome, mirror::Outcome::kOk);
  const auto r = run(cu, dir);
  ASSERT_EQ(r.outcome, mirror::Outcome::kOk) << r.message;
  EXPECT_TRUE(r.stats.full);
  EXPECT_EQ(filesUnder(dir + "/1"), (std::set<std::string>{"127.0.0.1+8000/b.html"}));
}

TEST(CuMirror, NoCuPortIsNoConnection) {
  testing::TempDir tmp;
  std::uint16_t port = 0;
  const int fd = testing::listenLoopback(&port);
  ::close(fd);  // nobody listens there now
  mirror::Options o;
  o.dir = tmp.file("m");
  o.endpoint = {"127.0.0.1", port, false};
  o.timeout_ms = 5000;
  const auto r = mirror::runMirror(o, posixEnv(), mirror::Callbacks{});
  EXPECT_EQ(r.outcome, mirror::Outcome::kNoConnection) << r.message;
  EXPECT_FALSE(fs::exists(o.dir + "/.lcc-mirror"));
}

}  // namespace
}  // namespace lcc
