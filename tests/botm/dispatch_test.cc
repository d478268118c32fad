// The BOT-M policy without sockets: hand-out, re-hand-out, results, deletes, hierarchy,
// fetch leases (issue 27 §3), content in an object store (calls as actions, issue 31 §1).
#include <gtest/gtest.h>

#include <set>

#include "botm/dispatch.h"
#include "common/posix_env.h"
#include "support/sim_clock.h"
#include "support/temp_dir.h"

namespace lcc::botm {
namespace {

using testing::TempDir;

FetchRequest fetchOf(std::uint64_t id, std::string url = "http://s/a.htm") {
  FetchRequest f;
  f.id = id;
  f.url = std::move(url);
  f.expected_mime = "text/html";
  f.max_size = 1000;
  return f;
}

FetchResult okResult(std::uint64_t job) {
  FetchResult r;
  r.id = job;
  r.http_status = 200;
  r.mime = "text/html";
  r.size = 5;
  r.md5 = "5d41402abc4b2a76b9719d911017c592";
  return r;
}

template <typename T>
std::vector<T> upstreamOf(const std::vector<Upstream>& ups) {
  std::vector<T> out;
  for (const auto& u : ups) {
    if (const T* t = std::get_if<T>(&u)) out.push_back(*t);
  }
  return out;
}

class DispatcherTest : public ::testing::Test {
 protected:
  DispatcherTest() {
    names_ = FilenameStore::open(posixEnv(), dir_.file("state")).value();
    content_ = dir_.file("content");
    disp_ = std::make_unique<Dispatcher>("m1", content_, names_.get(), posixEnv());
    disp_->sourceUp();
  }
  void writeFile(const std::string& path) {
    ASSERT_TRUE(posixEnv()->createDirs(path.substr(0, path.rfind('/'))).isOk());
    ASSERT_TRUE(posixEnv()->writeFileAtomic(path, "hello").isOk());
  }

  TempDir dir_;
  std::unique_ptr<FilenameStore> names_;
  std::string content_;
  std::unique_ptr<Dispatcher> disp_;
};

TEST_F(DispatcherTest, ReportsCapacityAndHandsFetchesToFreeSlotsWithNewNames) {
  Actions a;
  disp_->robotUp(1, 2, &a);
  ASSERT_EQ(upstreamOf<proto::LinkCapacity>(a.upstream).size(), 1u);
  EXPECT_EQ(upstreamOf<proto::LinkCapacity>(a.upstream)[0].slots, 2u);
  Actions b;
  for (std::uint64_t id = 100; id < 103; ++id) disp_->fetch(fetchOf(id), &b);
  ASSERT_EQ(b.to_robots.size(), 2u);  // two slots; the third waits
  EXPECT_EQ(disp_->queued(), 1u);
  EXPECT_EQ(b.to_robots[0].second.path, content_ + "/00/00/0");
  EXPECT_EQ(b.to_robots[1].second.path, content_ + "/00/00/1");
  EXPECT_EQ(b.to_robots[0].second.url, "http://s/a.htm");
  EXPECT_EQ(b.to_robots[0].second.max_size, 1000u);
  // A result frees a slot: the waiting fetch goes out, the result goes up.
  writeFile(b.to_robots[0].second.path);
  Actions c;
  disp_->robotResult(1, okResult(b.to_robots[0].second.id), &c);
  auto res = upstreamOf<FetchResult>(c.upstream);
  ASSERT_EQ(res.size(), 1u);
  EXPECT_EQ(res[0].id, 100u);
  EXPECT_TRUE(res[0].ok());
  EXPECT_EQ(res[0].machine, "m1");
  EXPECT_EQ(res[0].filename, "00/00/0");
  EXPECT_EQ(res[0].md5, "5d41402abc4b2a76b9719d911017c592");
  ASSERT_EQ(c.to_robots.size(), 1u);
  EXPECT_EQ(c.to_robots[0].second.path, content_ + "/00/00/2");
}

TEST_F(DispatcherTest, ARobotThatDiesHasItsFetchesRehandedWithTheSameNamesAndOneResultGoesUp) {
  Actions a;
  disp_->robotUp(1, 4, &a);
  disp_->fetch(fetchOf(7), &a);
  ASSERT_EQ(a.to_robots.size(), 1u);
  const auto first = a.to_robots[0].second;
  EXPECT_EQ(a.to_robots[0].first, 1u);
  Actions b;
  disp_->robotDown(1, &b);
  EXPECT_TRUE(b.to_robots.empty());  // nobody to take it yet
  EXPECT_EQ(upstreamOf<proto::LinkCapacity>(b.upstream)[0].slots, 0u);
  Actions c;
  disp_->robotUp(2, 4, &c);
  ASSERT_EQ(c.to_robots.size(), 1u);
  EXPECT_EQ(c.to_robots[0].first, 2u);
  EXPECT_EQ(c.to_robots[0].second.path, first.path);
  EXPECT_EQ(c.to_robots[0].second.url, first.url);
  EXPECT_EQ(disp_->counters().rehanded, 1u);
  // The dead robot's late answer is ignored; robot 2's answer goes up, once.
  Actions d;
  disp_->robotResult(1, okResult(first.id), &d);
  EXPECT_TRUE(d.upstream.empty());
  disp_->robotResult(2, okResult(c.to_robots[0].second.id), &d);
  disp_->robotResult(2, okResult(c.to_robots[0].second.id), &d);
  auto res = upstreamOf<FetchResult>(d.upstream);
  ASSERT_EQ(res.size(), 1u);
  EXPECT_EQ(res[0].id, 7u);
  EXPECT_EQ(res[0].filename, first.path.substr(content_.size() + 1));
}

TEST_F(DispatcherTest, FailuresAndUnchangedFreeTheNameForReuse) {
  Actions a;
  disp_->robotUp(1, 1, &a);
  disp_->fetch(fetchOf(1), &a);
  const auto f1 = a.to_robots.at(0).second;
  FetchResult nf;
  nf.id = f1.id;
  nf.code = ErrorCode::kNotFound;
  nf.http_status = 404;
  nf.message = "not found";
  Actions b;
  disp_->robotResult(1, nf, &b);
  auto res = upstreamOf<FetchResult>(b.upstream);
  ASSERT_EQ(res.size(), 1u);
  EXPECT_FALSE(res[0].ok());
  EXPECT_EQ(res[0].code, ErrorCode::kNotFound);
  EXPECT_TRUE(res[0].filename.empty());
  EXPECT_TRUE(names_->isFree(*names_->parse(f1.path.substr(content_.size() + 1))));
  Actions c;
  disp_->fetch(fetchOf(2), &c);
  EXPECT_EQ(c.to_robots.at(0).second.path, f1.path);  // reused
  FetchResult same;
  same.id = c.to_robots[0].second.id;
  same.unchanged = true;
  same.http_status = 304;
  Actions d;
  disp_->robotResult(1, same, &d);
  auto r2 = upstreamOf<FetchResult>(d.upstream);
  ASSERT_EQ(r2.size(), 1u);
  EXPECT_TRUE(r2[0].unchanged);
  EXPECT_TRUE(r2[0].filename.empty());
  EXPECT_EQ(names_->freeCount(), 1u);
}

TEST_F(DispatcherTest, DeletesUnlinkAndFreeOwnFilesAndRefuseOthers) {
  Actions a;
  disp_->robotUp(1, 1, &a);
  disp_->fetch(fetchOf(1), &a);
  const auto f = a.to_robots.at(0).second;
  writeFile(f.path);
  writeFile(f.path + ".http");  // the robot's response head (common/response_head.h)
  disp_->robotResult(1, okResult(f.id), &a);
  const std::string rel = f.path.substr(content_.size() + 1);
  Actions b;
  disp_->remove({9, "m2", rel}, &b);
  disp_->remove({10, "m1", "../../etc/passwd"}, &b);
  disp_->remove({11, "m1", rel}, &b);
  disp_->remove({12, "m1", rel}, &b);  // repeated: harmless
  auto del = upstreamOf<proto::LinkDeleted>(b.upstream);
  ASSERT_EQ(del.size(), 4u);
  EXPECT_EQ(del[0], (proto::LinkDeleted{9, false, "unknown-machine"}));
  EXPECT_EQ(del[1], (proto::LinkDeleted{10, false, "bad-file"}));
  EXPECT_EQ(del[2], (proto::LinkDeleted{11, true, ""}));
  EXPECT_EQ(del[3], (proto::LinkDeleted{12, true, ""}));
  EXPECT_FALSE(posixEnv()->exists(f.path));
  EXPECT_FALSE(posixEnv()->exists(f.path + ".http"));
  EXPECT_TRUE(names_->isFree(*names_->parse(rel)));
}

TEST_F(DispatcherTest, AFileStillBeingFetchedCannotBeDeleted) {
  Actions a;
  disp_->robotUp(1, 1, &a);
  disp_->fetch(fetchOf(1), &a);
  Actions b;
  disp_->remove({1, "m1", a.to_robots.at(0).second.path.substr(content_.size() + 1)}, &b);
  EXPECT_EQ(upstreamOf<proto::LinkDeleted>(b.upstream).at(0).reason, "in-use");
}

// The orphan sweep lists every content file no job holds: a stored file and a file
// nobody references (its result was lost), never a file being fetched, never a
// temporary file or a name the store would not have made.
TEST_F(DispatcherTest, ASweepListsTheContentFilesNoJobHolds) {
  Actions a;
  disp_->robotUp(1, 1, &a);
  disp_->fetch(fetchOf(1), &a);
  const auto stored = a.to_robots.at(0).second;
  writeFile(stored.path);
  disp_->robotResult(1, okResult(stored.id), &a);
  disp_->fetch(fetchOf(2), &a);
  const auto running = a.to_robots.at(1).second;
  writeFile(running.path);  // a robot wrote it, its result has not come
  const std::string orphan = content_ + "/" + names_->format(9000);
  writeFile(orphan);
  writeFile(orphan + ".123-1.tmp");
  writeFile(content_ + "/00/00/not-a-name");
  Actions b;
  disp_->sweep({5}, &b);
  auto files = upstreamOf<proto::LinkFile>(b.upstream);
  std::set<std::string> listed;
  for (const auto& f : files) {
    EXPECT_EQ(f.sweep, 5u);
    EXPECT_EQ(f.machine, "m1");
    EXPECT_EQ(f.size, 5u);
    listed.insert(f.name);
  }
  EXPECT_EQ(listed, (std::set<std::string>{stored.path.substr(content_.size() + 1), names_->format(9000)}));
  auto swept = upstreamOf<proto::LinkSwept>(b.upstream);
  ASSERT_EQ(swept.size(), 1u);
  EXPECT_EQ(swept[0], (proto::LinkSwept{5, "m1", 2}));
}

TEST_F(DispatcherTest, ResultsOfALostSourceSessionAreDroppedAndTheirFilesRemoved) {
  Actions a;
  disp_->robotUp(1, 1, &a);
  disp_->fetch(fetchOf(1), &a);
  disp_->fetch(fetchOf(2), &a);  // waits
  const auto f = a.to_robots.at(0).second;
  Actions down;
  disp_->sourceDown(&down);
  EXPECT_EQ(disp_->queued(), 0u);
  disp_->sourceUp();
  writeFile(f.path);
  Actions b;
  disp_->robotResult(1, okResult(f.id), &b);
  EXPECT_TRUE(upstreamOf<FetchResult>(b.upstream).empty());
  EXPECT_FALSE(posixEnv()->exists(f.path));
  EXPECT_EQ(disp_->counters().stale, 1u);
}

TEST_F(DispatcherTest, DuplicateIdsAndAFullQueueAreAnsweredNotQueued) {
  Dispatcher small("m1", content_, names_.get(), posixEnv(), 2);
  small.sourceUp();
  Actions a;
  small.fetch(fetchOf(1), &a);
  small.fetch(fetchOf(1), &a);
  small.fetch(fetchOf(2), &a);
  small.fetch(fetchOf(3), &a);
  auto res = upstreamOf<FetchResult>(a.upstream);
  ASSERT_EQ(res.size(), 2u);
  EXPECT_EQ(res[0].code, ErrorCode::kInternal);
  EXPECT_EQ(res[1].id, 3u);
  EXPECT_EQ(res[1].code, ErrorCode::kOffline);
}

TEST_F(DispatcherTest, RestartNeverReusesANameStillReferenced) {
  std::set<std::string> referenced;
  Actions a;
  disp_->robotUp(1, 8, &a);
  for (std::uint64_t i = 1; i <= 5; ++i) disp_->fetch(fetchOf(i), &a);
  for (const auto& [rid, f] : a.to_robots) {
    writeFile(f.path);
    Actions r;
    disp_->robotResult(1, okResult(f.id), &r);
    referenced.insert(upstreamOf<FetchResult>(r.upstream).at(0).filename);
  }
  Actions d;
  disp_->remove({1, "m1", *referenced.begin()}, &d);
  const std::string freed = *referenced.begin();
  referenced.erase(referenced.begin());
  disp_.reset();
  names_.reset();
  // Restart.
  names_ = FilenameStore::open(posixEnv(), dir_.file("state")).value();
  Dispatcher again("m1", content_, names_.get(), posixEnv());
  again.sourceUp();
  Actions b;
  again.robotUp(1, 100, &b);
  for (std::uint64_t i = 1; i <= 50; ++i) again.fetch(fetchOf(i), &b);
  ASSERT_EQ(b.to_robots.size(), 50u);
  EXPECT_EQ(b.to_robots[0].second.path, content_ + "/" + freed);  // the free list survived
  for (const auto& [rid, f] : b.to_robots) {
    EXPECT_EQ(referenced.count(f.path.substr(content_.size() + 1)), 0u) << f.path;
  }
}

// ---- Forwarder (a parent BOT-M) ----

TEST(Forwarder, LoadsChildrenByOverloadedCapacityAndPassesResultsThrough) {
  Forwarder fw(150);
  fw.sourceUp();
  ForwardActions a;
  fw.childUp(1, "m1", 2, &a);
  fw.childUp(2, "m2", 4, &a);
  auto caps = upstreamOf<proto::LinkCapacity>(a.upstream);
  ASSERT_FALSE(caps.empty());
  EXPECT_EQ(caps.back().slots, 6u);
  EXPECT_EQ(upstreamOf<proto::LinkMachines>(a.upstream).back().ids, (std::vector<std::string>{"m1", "m2"}));
  ForwardActions b;
  for (std::uint64_t i = 1; i <= 12; ++i) fw.fetch(fetchOf(i), &b);
  std::map<ChildId, int> per;
  for (const auto& [cid, f] : b.fetches) per[cid]++;
  EXPECT_EQ(per[1], 3);  // 2 x 150%
  EXPECT_EQ(per[2], 6);  // 4 x 150%
  EXPECT_EQ(fw.queued(), 3u);
  FetchResult r;
  r.id = b.fetches[0].second.id;
  r.http_status = 200;
  r.machine = "m2";
  r.filename = "00/00/2a";
  ForwardActions c;
  fw.childResult(b.fetches[0].first, r, &c);
  auto up = upstreamOf<FetchResult>(c.upstream);
  ASSERT_EQ(up.size(), 1u);
  EXPECT_EQ(up[0].machine, "m2");
  EXPECT_EQ(up[0].filename, "00/00/2a");
  EXPECT_EQ(c.fetches.size(), 1u);  // a freed place is used at once
}

TEST(Forwarder, PassesItsChildrensContentUrlsUpWithTheMachines) {
  Forwarder fw(100);
  fw.sourceUp();
  ForwardActions a;
  fw.childUp(1, "m1", 1, &a, "http://h1:7780");
  fw.childUp(2, "m2", 1, &a);  // an older child: no content URL
  auto ms = upstreamOf<proto::LinkMachines>(a.upstream);
  ASSERT_FALSE(ms.empty());
  EXPECT_EQ(ms.back().content_urls, (std::map<std::string, std::string>{{"m1", "http://h1:7780"}}));
  // m2 is itself a parent of m3 and m4; it says where m3 is, and m9 is not behind it.
  ForwardActions b;
  fw.childMachines(2, {"m2", "m3", "m4"}, &b, {{"m3", "http://h3:1"}, {"m9", "http://h9:1"}});
  ms = upstreamOf<proto::LinkMachines>(b.upstream);
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_EQ(ms[0].ids, (std::vector<std::string>{"m1", "m2", "m3", "m4"}));
  EXPECT_EQ(ms[0].content_urls,
            (std::map<std::string, std::string>{{"m1", "http://h1:7780"}, {"m3", "http://h3:1"}}));
  // Only a change of the URLs is announced too; nothing when nothing changed.
  ForwardActions c;
  fw.childMachines(2, {"m2", "m3", "m4"}, &c, {{"m3", "http://h3:2"}});
  ASSERT_EQ(upstreamOf<proto::LinkMachines>(c.upstream).size(), 1u);
  EXPECT_EQ(upstreamOf<proto::LinkMachines>(c.upstream)[0].content_urls.at("m3"), "http://h3:2");
  ForwardActions d;
  fw.childMachines(2, {"m2", "m3", "m4"}, &d, {{"m3", "http://h3:2"}});
  EXPECT_TRUE(upstreamOf<proto::LinkMachines>(d.upstream).empty());
  // A child that goes takes its machines and URLs with it.
  ForwardActions e;
  fw.childDown(1, &e);
  ms = upstreamOf<proto::LinkMachines>(e.upstream);
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_EQ(ms[0].content_urls, (std::map<std::string, std::string>{{"m3", "http://h3:2"}}));
}

TEST(Forwarder, RoutesDeletesByMachineAndAnswersUnknownMachines) {
  Forwarder fw(100);
  fw.sourceUp();
  ForwardActions a;
  fw.childUp(1, "m1", 1, &a);
  fw.childUp(2, "m2", 1, &a);
  fw.childMachines(2, {"m2", "m3"}, &a);  // m2 is itself a parent of m3
  EXPECT_EQ(upstreamOf<proto::LinkMachines>(a.upstream).back().ids, (std::vector<std::string>{"m1", "m2", "m3"}));
  ForwardActions b;
  fw.remove({5, "m3", "00/00/01"}, &b);
  fw.remove({6, "m1", "00/00/02"}, &b);
  fw.remove({7, "m9", "00/00/03"}, &b);
  ASSERT_EQ(b.deletes.size(), 2u);
  EXPECT_EQ(b.deletes[0].first, 2u);
  EXPECT_EQ(b.deletes[0].second.machine, "m3");
  EXPECT_EQ(b.deletes[1].first, 1u);
  EXPECT_EQ(upstreamOf<proto::LinkDeleted>(b.upstream).at(0), (proto::LinkDeleted{7, false, "unknown-machine"}));
  ForwardActions c;
  fw.childDeleted(2, {b.deletes[0].second.id, true, ""}, &c);
  EXPECT_EQ(upstreamOf<proto::LinkDeleted>(c.upstream).at(0), (proto::LinkDeleted{5, true, ""}));
  // A child that goes away: its pending delete is answered unknown-machine.
  ForwardActions d;
  fw.childDown(1, &d);
  EXPECT_EQ(upstreamOf<proto::LinkDeleted>(d.upstream).at(0), (proto::LinkDeleted{6, false, "unknown-machine"}));
  EXPECT_EQ(upstreamOf<proto::LinkMachines>(d.upstream).back().ids, (std::vector<std::string>{"m2", "m3"}));
}

TEST(Forwarder, AChildThatGoesAwayHasItsFetchesGivenToAnother) {
  Forwarder fw(100);
  fw.sourceUp();
  ForwardActions a;
  fw.childUp(1, "m1", 1, &a);
  fw.fetch(fetchOf(42), &a);
  ASSERT_EQ(a.fetches.size(), 1u);
  ForwardActions b;
  fw.childDown(1, &b);
  fw.childUp(2, "m2", 1, &b);
  ASSERT_EQ(b.fetches.size(), 1u);
  EXPECT_EQ(b.fetches[0].first, 2u);
  EXPECT_EQ(b.fetches[0].second.url, "http://s/a.htm");
  FetchResult r;
  r.id = b.fetches[0].second.id;
  r.code = ErrorCode::kNotFound;
  ForwardActions c;
  fw.childResult(1, r, &c);  // from the gone child: ignored
  fw.childResult(2, r, &c);
  ASSERT_EQ(upstreamOf<FetchResult>(c.upstream).size(), 1u);
  EXPECT_EQ(upstreamOf<FetchResult>(c.upstream)[0].id, 42u);
}

// ---- content in an object store (issue 31 §1): the Dispatcher returns its DELETEs and
// listing pages as calls and takes their answers; nothing waits for the store meanwhile.
class DispatchObjectsTest : public DispatcherTest {
 protected:
  explicit DispatchObjectsTest(std::size_t max_calls = 2) {
    s3::S3Options o;
    o.endpoint = "http://127.0.0.1:1";
    o.key_prefix = "p/";
    disp_->useObjectStore(o, max_calls);
    Actions a;
    disp_->robotUp(1, 1, &a);
  }
  // One fetch handed to the robot and answered (`ok`): its file name.
  std::string fetchAndAnswer(std::uint64_t id, bool ok, Actions* out) {
    Actions a;
    disp_->fetch(fetchOf(id), &a);
    const FetchRequest rf = a.to_robots.at(0).second;
    FetchResult r = okResult(rf.id);
    if (!ok) r.code = ErrorCode::kNotFound;
    disp_->robotResult(1, r, out);
    return rf.path.substr(content_.size() + 1);
  }
  static s3::CallAnswer answer(const s3::Call& c, Status s = Status::ok()) { return {c.ticket, std::move(s), {}}; }
};

TEST_F(DispatchObjectsTest, ADeleteIsAnsweredWhenTheStoreIsAndFetchesGoOnMeanwhile) {
  Actions a;
  const std::string stored = fetchAndAnswer(1, true, &a);
  Actions b;
  disp_->remove({7, "m1", stored}, &b);
  EXPECT_TRUE(upstreamOf<proto::LinkDeleted>(b.upstream).empty()) << "not before the store answered";
  ASSERT_EQ(b.object_calls.size(), 1u);
  EXPECT_EQ(b.object_calls[0].kind, s3::Call::Kind::kDelete);
  EXPECT_EQ(b.object_calls[0].key, "p/m1/" + stored);
  // The DELETE hangs: fetches and results still go, and the name is not handed out.
  Actions c;
  const std::string second = fetchAndAnswer(2, true, &c);
  EXPECT_NE(second, stored);
  EXPECT_EQ(upstreamOf<FetchResult>(c.upstream).size(), 1u);
  Actions d;
  disp_->objectAnswer(answer(b.object_calls[0]), &d);
  EXPECT_EQ(upstreamOf<proto::LinkDeleted>(d.upstream), (std::vector<proto::LinkDeleted>{{7, true, ""}}));
  EXPECT_TRUE(names_->isFree(*names_->parse(stored)));
  EXPECT_EQ(disp_->objectCallsOut(), 0u);
}

TEST_F(DispatchObjectsTest, AFailedDeleteIsAnsweredAsBeforeAndItsNameIsNotReused) {
  Actions a;
  const std::string stored = fetchAndAnswer(1, true, &a);
  Actions b;
  disp_->remove({7, "m1", stored}, &b);
  Actions c;
  disp_->objectAnswer(answer(b.object_calls.at(0), Status::ioError("s3: DELETE: timed out")), &c);
  EXPECT_EQ(upstreamOf<proto::LinkDeleted>(c.upstream),
            (std::vector<proto::LinkDeleted>{{7, false, "io-error: s3: DELETE: timed out"}}));
  EXPECT_FALSE(names_->isFree(*names_->parse(stored)));
}

TEST_F(DispatchObjectsTest, CallsPastTheLimitWaitInOrderAndEveryDeleteIsAnsweredOnce) {
  Actions a;
  for (std::uint64_t id = 1; id <= 3; ++id) disp_->remove({id, "m1", names_->format(100 + id)}, &a);
  disp_->remove({4, "m1", names_->format(101)}, &a);  // the same name again: no second DELETE
  ASSERT_EQ(a.object_calls.size(), 2u) << "s3.botm_calls = 2";
  EXPECT_EQ(disp_->objectCallsWaiting(), 1u);
  std::vector<proto::LinkDeleted> answered;
  std::deque<s3::Call> out(a.object_calls.begin(), a.object_calls.end());
  for (int round = 0; round < 10 && !out.empty(); ++round) {
    Actions b;
    disp_->objectAnswer(answer(out.front()), &b);
    out.pop_front();
    out.insert(out.end(), b.object_calls.begin(), b.object_calls.end());
    for (const auto& d : upstreamOf<proto::LinkDeleted>(b.upstream)) answered.push_back(d);
  }
  std::set<std::uint64_t> ids;
  for (const auto& d : answered) ids.insert(d.id);
  EXPECT_EQ(answered.size(), 4u);
  EXPECT_EQ(ids, (std::set<std::uint64_t>{1, 2, 3, 4}));
  EXPECT_EQ(disp_->objectCallsOut() + disp_->objectCallsWaiting(), 0u);
}

// Past botm.max_queued calls waiting, a delete is answered at once as a failed one (the
// QM retries it); those before it are kept and answered in turn.
TEST_F(DispatchObjectsTest, ADeletePastTheWaitingLimitIsAnsweredBusyAtOnce) {
  disp_ = std::make_unique<Dispatcher>("m1", content_, names_.get(), posixEnv(), /*max_queued=*/1);
  disp_->useObjectStore(s3::S3Options{}, 1);
  disp_->sourceUp();
  Actions a;
  for (std::uint64_t id = 1; id <= 3; ++id) disp_->remove({id, "m1", names_->format(100 + id)}, &a);
  EXPECT_EQ(a.object_calls.size(), 1u);
  EXPECT_EQ(disp_->objectCallsWaiting(), 1u);
  EXPECT_EQ(upstreamOf<proto::LinkDeleted>(a.upstream),
            (std::vector<proto::LinkDeleted>{{3, false, "io-error: object store busy (botm.max_queued calls wait)"}}));
  Actions b;
  disp_->objectAnswer(answer(a.object_calls[0]), &b);
  ASSERT_EQ(b.object_calls.size(), 1u) << "the waiting one goes out";
  EXPECT_EQ(upstreamOf<proto::LinkDeleted>(b.upstream), (std::vector<proto::LinkDeleted>{{1, true, ""}}));
  Actions c;
  disp_->objectAnswer(answer(b.object_calls[0]), &c);
  EXPECT_EQ(upstreamOf<proto::LinkDeleted>(c.upstream), (std::vector<proto::LinkDeleted>{{2, true, ""}}));
}

// A free name whose old object is being deleted (a repeated delete, a stray object) is
// kept from the next fetch until the store answered, then free again.
TEST_F(DispatchObjectsTest, ANameIsNotHandedOutWhileItsObjectIsBeingDeleted) {
  Actions a;
  const std::string freed = fetchAndAnswer(1, false, &a);
  ASSERT_TRUE(names_->isFree(*names_->parse(freed)));
  Actions b;
  disp_->remove({7, "m1", freed}, &b);
  Actions c;
  EXPECT_NE(fetchAndAnswer(2, false, &c), freed);
  Actions d;
  disp_->objectAnswer(answer(b.object_calls.at(0)), &d);
  EXPECT_EQ(upstreamOf<proto::LinkDeleted>(d.upstream), (std::vector<proto::LinkDeleted>{{7, true, ""}}));
  EXPECT_TRUE(names_->isFree(*names_->parse(freed))) << "free again once the DELETE is answered";
}

// A result of a source session that ended: its object is deleted, and only then is its
// name free; the answer of a delete asked by that session is dropped with it.
TEST_F(DispatchObjectsTest, AStaleResultsObjectGoesBeforeItsNameIsFreed) {
  Actions a;
  const std::string stored = fetchAndAnswer(1, true, &a);
  disp_->remove({7, "m1", stored}, &a);
  disp_->fetch(fetchOf(2), &a);
  const FetchRequest rf = a.to_robots.back().second;
  Actions down;
  disp_->sourceDown(&down);
  disp_->sourceUp();
  Actions b;
  disp_->robotResult(1, okResult(rf.id), &b);
  ASSERT_EQ(b.object_calls.size(), 1u);
  const auto name = names_->parse(rf.path.substr(content_.size() + 1));
  EXPECT_FALSE(names_->isFree(*name));
  Actions c;
  disp_->objectAnswer(answer(b.object_calls[0]), &c);
  disp_->objectAnswer(answer(a.object_calls.at(0)), &c);
  EXPECT_TRUE(names_->isFree(*name));
  EXPECT_TRUE(upstreamOf<proto::LinkDeleted>(c.upstream).empty()) << "its source session is gone";
}

TEST_F(DispatchObjectsTest, ASweepListsTheBucketPageByPageLeavingOutHeldNames) {
  Actions a;
  disp_->fetch(fetchOf(1), &a);  // running: its name is held
  const std::string running = a.to_robots.at(0).second.path.substr(content_.size() + 1);
  Actions b;
  disp_->sweep({5}, &b);
  ASSERT_EQ(b.object_calls.size(), 1u);
  EXPECT_EQ(b.object_calls[0].kind, s3::Call::Kind::kList);
  EXPECT_EQ(b.object_calls[0].key, "p/m1/");
  s3::CallAnswer page1 = answer(b.object_calls[0]);
  page1.page.objects = {{"p/m1/" + running, 1}, {"p/m1/00/00/9", 3}, {"p/m1/00/00/9.77-1.tmp", 4}, {"p/m1/00/00/a", 5}};
  page1.page.next_token = "t1";
  Actions c;
  disp_->objectAnswer(page1, &c);
  ASSERT_EQ(c.object_calls.size(), 1u);
  EXPECT_EQ(c.object_calls[0].token, "t1");
  EXPECT_TRUE(upstreamOf<proto::LinkSwept>(c.upstream).empty());
  s3::CallAnswer page2 = answer(c.object_calls[0]);
  page2.page.objects = {{"p/m1/00/00/b", 6}};
  Actions d;
  disp_->objectAnswer(page2, &d);
  std::vector<proto::LinkFile> files = upstreamOf<proto::LinkFile>(c.upstream);
  for (const auto& f : upstreamOf<proto::LinkFile>(d.upstream)) files.push_back(f);
  EXPECT_EQ(files, (std::vector<proto::LinkFile>{{5, "m1", "00/00/9", 3}, {5, "m1", "00/00/a", 5}, {5, "m1", "00/00/b", 6}}));
  EXPECT_EQ(upstreamOf<proto::LinkSwept>(d.upstream), (std::vector<proto::LinkSwept>{{5, "m1", 3}}));
}

// ---- fetch leases (issue 27 §3): a fetch whose lease ran out while it waited for a
// robot is never handed out (answered 130, its URL stays queued at the QM); a renewal
// from the source keeps it alive and reaches the robots holding fetches; a robot gets
// what is left of the lease.
class DispatchLeaseTest : public DispatcherTest {
 protected:
  DispatchLeaseTest() {
    disp_->useClock(&clock_);
    Actions a;
    disp_->robotUp(7, 1, &a);  // one slot: a second fetch waits in the queue
  }
  FetchRequest leased(std::uint64_t id, Millis lease) {
    FetchRequest f = fetchOf(id, "http://s/" + std::to_string(id) + ".htm");
    f.lease = lease;
    return f;
  }
  // The robot's answer to the fetch it holds (the file written, as a robot leaves it).
  Actions answer(const FetchRequest& rf) {
    writeFile(rf.path);
    Actions a;
    disp_->robotResult(7, okResult(rf.id), &a);
    return a;
  }

  testing::SimClock clock_;
};

TEST_F(DispatchLeaseTest, AFetchWhoseLeaseRanOutInTheQueueIsNeverHandedToARobot) {
  Actions a;
  disp_->fetch(leased(1, Millis(10000)), &a);
  disp_->fetch(leased(2, Millis(10000)), &a);
  ASSERT_EQ(a.to_robots.size(), 1u);
  EXPECT_EQ(a.to_robots[0].second.lease, Millis(10000)) << "the robot gets the lease as it came";
  // The source stops renewing (paused, dead, cut off) and the first fetch is slow.
  clock_.advance(Millis(10000));
  Actions b = answer(a.to_robots[0].second);
  EXPECT_TRUE(b.to_robots.empty()) << "fetch 2's lease has run out: no robot may start it";
  auto rs = upstreamOf<FetchResult>(b.upstream);
  ASSERT_EQ(rs.size(), 2u);
  EXPECT_TRUE(rs[0].ok());
  EXPECT_EQ(rs[1].id, 2u);
  EXPECT_EQ(rs[1].code, ErrorCode::kOffline) << "retryable: nothing fetched, the QM queues it again";
  EXPECT_EQ(disp_->queued(), 0u);
  EXPECT_EQ(disp_->counters().lease_expired, 1u);
}

TEST_F(DispatchLeaseTest, ARenewedFetchGoesOnWithWhatIsLeftOfItsLease) {
  Actions a;
  disp_->fetch(leased(1, Millis(10000)), &a);
  disp_->fetch(leased(2, Millis(10000)), &a);
  clock_.advance(Millis(8000));
  Actions r;
  disp_->renew(Millis(10000), &r);
  ASSERT_EQ(r.renewals.size(), 1u) << "the robot holding fetch 1 is told";
  EXPECT_EQ(r.renewals[0], (std::pair<RobotId, Millis>{7, Millis(10000)}));
  clock_.advance(Millis(6000));  // 14 s after the hand-off, 6 s after the renewal
  Actions b = answer(a.to_robots[0].second);
  ASSERT_EQ(b.to_robots.size(), 1u) << "renewed: fetch 2 goes to the robot";
  EXPECT_EQ(b.to_robots[0].second.lease, Millis(4000)) << "with what is left of its lease";
  EXPECT_EQ(upstreamOf<FetchResult>(b.upstream).size(), 1u);
}

TEST_F(DispatchLeaseTest, AFetchWithoutALeaseKeepsNone) {
  Actions a;
  disp_->fetch(leased(1, Millis(0)), &a);
  disp_->fetch(leased(2, Millis(0)), &a);
  clock_.advance(Millis(3600 * 1000));
  Actions b = answer(a.to_robots[0].second);
  ASSERT_EQ(b.to_robots.size(), 1u) << "an older QM sends no lease: nothing expires";
  EXPECT_EQ(b.to_robots[0].second.lease, Millis(0));
  Actions r;
  disp_->renew(Millis(5000), &r);
  EXPECT_TRUE(r.renewals.empty()) << "no fetch with a lease: no robot to tell";
}

}  // namespace
}  // namespace lcc::botm
