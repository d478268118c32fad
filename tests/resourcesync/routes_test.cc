// The ResourceSync routes over storage-memory, without a daemon: what only a unit test
// can set up — the purge horizon (410), created/updated/deleted at exact seqs, and
// Resource Dump packages whose content changes while they are written (abandoned:
// no ZIP central directory, an error for the HTTP server to cut the body with).
// tests/resourcesync/resourcesync_test.py checks the same documents on a real lccd
// with xmllint, unzip and Python's zipfile.
#include <gtest/gtest.h>

#include <map>

#include "common/content_meta.h"
#include "common/md5.h"
#include "resourcesync/resource_dump.h"
#include "resourcesync/resourcesync.h"
#include "support/store_plugin_fixture.h"

namespace lcc::resourcesync {
namespace {

class StringSink final : public ByteSink {
 public:
  Status write(std::string_view b) override {
    out.append(b);
    return Status::ok();
  }
  std::string out;
};

class StringSource final : public ContentSource {
 public:
  explicit StringSource(std::string s) : s_(std::move(s)) {}
  std::uint64_t size() const override { return s_.size(); }
  Result<std::size_t> read(char* buf, std::size_t n) override {
    const std::size_t k = std::min(n, s_.size() - at_);
    std::copy_n(s_.data() + at_, k, buf);
    at_ += k;
    return k;
  }

 private:
  std::string s_;
  std::size_t at_ = 0;
};

// Content by URL.
struct Files {
  std::map<std::string, std::string> bytes;
};

class FakeContent final : public DumpContent {
 public:
  explicit FakeContent(Files& f) : f_(f) {}
  std::unique_ptr<ContentSource> open(const ContentRecord& r, std::string* why) override {
    auto it = f_.bytes.find(r.key.url);
    if (it == f_.bytes.end()) {
      *why = "no such file";
      return nullptr;
    }
    return std::make_unique<StringSource>(it->second);
  }

 private:
  Files& f_;
};

// The memory store, with a hook before each scanProvider (to change the store between
// the scans of a package: the routes' count, the manifest, the files).
class HookedStore final : public ContentStore {
 public:
  explicit HookedStore(ContentStore& inner) : inner_(inner) {}
  const StoreOpenInfo& openInfo() const override { return inner_.openInfo(); }
  Status apply(const ContentBatch& b) override { return inner_.apply(b); }
  Status sync() override { return inner_.sync(); }
  Status close() override { return inner_.close(); }
  Result<std::optional<ContentRecord>> get(std::string_view k) override { return inner_.get(k); }
  Status scanProvider(ProviderId pid, const std::function<bool(const ContentRecord&)>& fn) override {
    if (before_scan) before_scan(++scans);
    return inner_.scanProvider(pid, fn);
  }
  Status scanSince(ChangeSeq after, const ContentFilter& f,
                   const std::function<bool(const ContentRecord&)>& fn) override {
    return inner_.scanSince(after, f, fn);
  }
  Result<ChangeSeq> maxSeq() override { return inner_.maxSeq(); }
  Result<std::uint64_t> count() override { return inner_.count(); }
  Result<std::optional<std::string>> getMeta(std::string_view k) override { return inner_.getMeta(k); }

  std::function<void(int)> before_scan;
  int scans = 0;

 private:
  ContentStore& inner_;
};

constexpr std::string_view kEndOfCentralDirectory("PK\x05\x06", 4);

class ResourceSyncRoutesTest : public testing::StorePluginFixture {
 protected:
  ResourceSyncRoutesTest() : StorePluginFixture("storage-memory") {
    store_ = openContent();
    hooked_ = std::make_unique<HookedStore>(*store_);
    Options o;
    o.base_url = "http://lcc.test";
    o.page_size = 10;
    addRoutes(router_, *hooked_, nullptr, clock_, o, [this] { return std::make_unique<FakeContent>(files_); });
  }

  void put(const std::string& url, ChangeSeq seq, const std::string& body) {
    ContentRecord r;
    r.key = {1, url, "text/html"};
    r.seq = seq;
    r.deleted = body.empty();
    r.size = body.size();
    r.md5 = body.empty() ? "" : Md5::of(body);
    r.stored = clock_.now();
    if (!body.empty()) files_.bytes[url] = body;
    ContentBatch b;
    b.put(r);
    ASSERT_TRUE(store_->apply(b).isOk());
  }

  http::Response get(const std::string& path, const std::string& since = "") {
    http::Request req;
    req.method = "GET";
    req.path = path;
    req.target = path;
    if (!since.empty()) req.query.emplace("since", since);
    return router_.dispatch(req);
  }

  // The change="..." of each URL in a Change List.
  static std::map<std::string, std::string> changes(const std::string& xml) {
    std::map<std::string, std::string> out;
    for (std::size_t at = xml.find("<loc>"); at != std::string::npos; at = xml.find("<loc>", at + 1)) {
      const auto end = xml.find("</loc>", at);
      const auto change = xml.find("change=\"", end) + 8;
      out[xml.substr(at + 5, end - at - 5)] = xml.substr(change, xml.find('"', change) - change);
    }
    return out;
  }

  Status package(std::uint64_t n, StringSink& sink) {
    http::Response r = get("/resourcesync/1/resourcedump-" + std::to_string(n) + ".zip");
    EXPECT_EQ(r.status, 200) << r.body;
    if (!r.stream) return Status::internal("not streamed");
    return r.stream(sink);
  }

  PluginPtr<ContentStore> store_;
  std::unique_ptr<HookedStore> hooked_;
  http::Router router_;
  Files files_;
};

TEST_F(ResourceSyncRoutesTest, ChangeListSaysCreatedUpdatedDeleted) {
  put("http://s/a", 1, "a1");
  put("http://s/b", 2, "b1");
  put("http://s/gone", 3, "g1");
  EXPECT_EQ(changes(get("/resourcesync/1/changelist.xml", "0").body),
            (std::map<std::string, std::string>{{"http://s/a", "created"}, {"http://s/b", "created"},
                                                {"http://s/gone", "created"}}));
  put("http://s/a", 4, "a2");     // stored before 3, changed after: updated
  put("http://s/c", 5, "c1");     // first stored after 3: created
  put("http://s/gone", 6, "");    // removed: deleted
  put("http://s/b", 7, "");       // removed, then stored again: created anew
  put("http://s/b", 8, "b2");
  EXPECT_EQ(changes(get("/resourcesync/1/changelist.xml", "3").body),
            (std::map<std::string, std::string>{{"http://s/a", "updated"}, {"http://s/c", "created"},
                                                {"http://s/gone", "deleted"}, {"http://s/b", "created"}}));
  EXPECT_EQ(changes(get("/resourcesync/1/changelist.xml", "5").body),
            (std::map<std::string, std::string>{{"http://s/gone", "deleted"}, {"http://s/b", "created"}}));
}

TEST_F(ResourceSyncRoutesTest, ChangeListBelowThePurgeHorizonIs410) {
  for (ChangeSeq s = 1; s <= 6; ++s) put("http://s/" + std::to_string(s), s, "x");
  ContentBatch b;
  b.putMeta(kContentMetaPurgedSeq, "4");
  ASSERT_TRUE(store_->apply(b).isOk());
  http::Response refused = get("/resourcesync/1/changelist.xml", "3");
  EXPECT_EQ(refused.status, 410);
  EXPECT_NE(refused.body.find("changes before seq 5 were purged"), std::string::npos) << refused.body;
  EXPECT_NE(refused.body.find("Resource List"), std::string::npos) << refused.body;
  EXPECT_EQ(get("/resourcesync/1/changelist.xml", "4").status, 200) << "at the horizon nothing is missing";
  EXPECT_EQ(get("/resourcesync/1/changelist.xml", "0").status, 200) << "from the start needs no removals";
  EXPECT_EQ(get("/resourcesync/1/changelist.xml").status, 200);
  b.clear();
  b.putMeta(kContentMetaPurgedSeq, "4x");
  ASSERT_TRUE(store_->apply(b).isOk());
  EXPECT_EQ(get("/resourcesync/1/changelist.xml", "3").status, 500) << "a damaged horizon is not ignored";
}

TEST_F(ResourceSyncRoutesTest, APackageIsWholeOrAbandoned) {
  put("http://s/a.html", 1, "alpha");
  put("http://s/b", 2, "beta");
  put("http://s/c", 3, "gamma");
  StringSink whole;
  ASSERT_TRUE(package(1, whole).isOk());
  EXPECT_EQ(whole.out.substr(30, 12), "manifest.xml") << "the first local entry";
  EXPECT_NE(whole.out.find(kEndOfCentralDirectory), std::string::npos);
  EXPECT_EQ(get("/resourcesync/1/resourcedump-2.zip").status, 404);

  // A file whose bytes are not what the manifest says (replaced underneath).
  files_.bytes["http://s/b"] = "BETA";
  StringSink changed;
  Status s = package(1, changed);
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("http://s/b changed"), std::string::npos) << s.toString();
  EXPECT_EQ(changed.out.find(kEndOfCentralDirectory), std::string::npos) << "no central directory";

  // A URL listed in the manifest and removed before the files scan.
  files_.bytes["http://s/b"] = "beta";
  hooked_->scans = 0;
  hooked_->before_scan = [&](int scan) {
    if (scan == 3) put("http://s/c", 4, "");  // 1: the package count, 2: the manifest, 3: the files
  };
  StringSink lost;
  s = package(1, lost);
  hooked_->before_scan = nullptr;
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("2 of the 3 files"), std::string::npos) << s.toString();
  EXPECT_EQ(lost.out.find(kEndOfCentralDirectory), std::string::npos);

  // Content that cannot be read.
  files_.bytes.erase("http://s/b");
  StringSink unreadable;
  s = package(1, unreadable);
  EXPECT_NE(s.message().find("http://s/b cannot be read: no such file"), std::string::npos) << s.toString();
  EXPECT_EQ(unreadable.out.find(kEndOfCentralDirectory), std::string::npos);
}

TEST(ResourcePath, TheSeqWithASafeExtension) {
  ContentRecord r;
  r.seq = 42;
  auto path = [&](const std::string& url) {
    r.key.url = url;
    return resourcePath(r);
  };
  EXPECT_EQ(path("http://s/docs/p0.html"), "/resources/42.html");
  EXPECT_EQ(path("http://s/a.PDF?x=1.exe#y.z"), "/resources/42.pdf");
  EXPECT_EQ(path("http://s/"), "/resources/42");
  EXPECT_EQ(path("http://s.example"), "/resources/42") << "the host's dot is no extension";
  EXPECT_EQ(path("http://s/a.tar.gz"), "/resources/42.gz");
  EXPECT_EQ(path("http://s/a.toolongext"), "/resources/42");
  EXPECT_EQ(path("http://s/a.x%2F..%2F"), "/resources/42");
  EXPECT_EQ(path("http://s/a."), "/resources/42");
}

}  // namespace
}  // namespace lcc::resourcesync
