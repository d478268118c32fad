// dispatch_content.cc — the Dispatcher's content removal and orphan sweep (dispatch.h):
// files in the content folder through the Env, on the caller's thread, or objects of the
// bucket through calls returned as actions and answered later (objectAnswer()).
#include <spdlog/spdlog.h>

#include <algorithm>

#include "botm/dispatch.h"
#include "common/response_head.h"

namespace lcc::botm {

// The response head the robot kept beside the file (common/response_head.h). Usually
// it is the file's attribute and went with the unlink; a side file is left where the
// file system refused the attribute (or by an older robot), and the BOT-M cannot tell
// which names have one, so it always tries: an unlink of an absent name is a lookup
// (docs/design-decisions.md, "Response heads as attributes"). A head that cannot be
// removed costs disk space only: it names its body's MD5, so it is never paired with
// the next content of the name.
void Dispatcher::removeHead(std::uint64_t name) {
  Status s = env_->removeFile(responseHeadPath(pathOf(name)));
  if (!s.isOk() && s.code() != StatusCode::kNotFound) {
    spdlog::warn("botm: cannot unlink {}: {}", responseHeadPath(pathOf(name)), s.message());
  }
}

Status Dispatcher::removeFile(std::uint64_t name) {
  Status s = env_->removeFile(pathOf(name));
  if (!s.isOk() && s.code() != StatusCode::kNotFound) return s;
  removeHead(name);
  return Status::ok();
}

void Dispatcher::dropName(std::uint64_t name, bool unlink_file, Actions* out) {
  if (unlink_file && objects_) return removeObject(name, true, std::nullopt, out);
  if (unlink_file) {
    Status s = removeFile(name);
    if (!s.isOk()) {
      spdlog::warn("botm: cannot remove {}: {}; the name is not reused", names_->format(name), s.message());
      return;
    }
  }
  names_->release(name);
}

Result<std::uint64_t> Dispatcher::allocateName() {
  for (;;) {  // ends: allocate() never hands out a name twice, and few DELETEs are under way
    auto n = names_->allocate();
    if (!n.isOk()) return n;
    auto it = removing_.find(*n);
    if (it == removing_.end()) return n;
    it->second.parked = true;  // its old object may still be there: not before the DELETE
  }
}

void Dispatcher::remove(const proto::LinkDelete& d, Actions* out) {
  if (!source_up_) return;
  counters_.deletes++;
  if (d.machine != machine_) {
    counters_.deletes_unknown_machine++;
    out->upstream.push_back(proto::LinkDeleted{d.id, false, std::string(proto::kReasonUnknownMachine)});
    return;
  }
  auto n = names_->parse(d.file);
  if (!n) {
    out->upstream.push_back(proto::LinkDeleted{d.id, false, "bad-file"});
    return;
  }
  if (names_in_use_.count(*n)) {
    out->upstream.push_back(proto::LinkDeleted{d.id, false, "in-use"});
    return;
  }
  // A name that is free already: a repeated delete, or a stray file under a name
  // nobody holds (the orphan sweep lists what is there): its content goes.
  const bool held = !names_->isFree(*n);
  if (objects_) {
    if (calls_waiting_.size() >= max_queued_ && !removing_.count(*n)) {
      out->upstream.push_back(proto::LinkDeleted{d.id, false, "io-error: object store busy (botm.max_queued calls wait)"});
      return;
    }
    return removeObject(*n, held, d.id, out);
  }
  Status s = removeFile(*n);
  if (!s.isOk()) {
    out->upstream.push_back(proto::LinkDeleted{d.id, false, "io-error: " + s.message()});
    return;
  }
  if (held) names_->release(*n);
  out->upstream.push_back(proto::LinkDeleted{d.id, true, ""});
}

// ---- the object store -----------------------------------------------------------

void Dispatcher::useObjectStore(s3::S3Options options, std::size_t max_calls) {
  objects_ = std::move(options);
  max_calls_ = std::max<std::size_t>(1, max_calls);
}

std::uint64_t Dispatcher::queueCall(s3::Call::Kind kind, std::string key, std::string token) {
  const std::uint64_t ticket = next_ticket_++;
  calls_waiting_.push_back(s3::Call{ticket, kind, std::move(key), std::move(token)});
  return ticket;
}

void Dispatcher::issueCalls(Actions* out) {
  while (calls_out_ < max_calls_ && !calls_waiting_.empty()) {
    out->object_calls.push_back(std::move(calls_waiting_.front()));
    calls_waiting_.pop_front();
    ++calls_out_;
  }
}

void Dispatcher::removeObject(std::uint64_t name, bool release, std::optional<std::uint64_t> answer, Actions* out) {
  auto [it, fresh] = removing_.try_emplace(name);
  Removal& r = it->second;
  r.release = r.release || release;
  if (answer) r.answers.emplace_back(session_, *answer);
  // One DELETE per name at a time: a second request for it waits for the first's answer.
  if (fresh) delete_calls_.emplace(queueCall(s3::Call::Kind::kDelete, objects_->objectKey(machine_, names_->format(name)), {}), name);
  issueCalls(out);
}

void Dispatcher::objectAnswer(const s3::CallAnswer& a, Actions* out) {
  if (auto d = delete_calls_.find(a.ticket); d != delete_calls_.end()) {
    const std::uint64_t name = d->second;
    delete_calls_.erase(d);
    --calls_out_;
    removed(name, a.status, out);
  } else if (listings_.count(a.ticket)) {
    --calls_out_;
    listed(a.ticket, a, out);
  }
  issueCalls(out);
}

void Dispatcher::removed(std::uint64_t name, const Status& s, Actions* out) {
  auto it = removing_.find(name);
  if (it == removing_.end()) return;
  Removal r = std::move(it->second);
  removing_.erase(it);
  for (const auto& [session, id] : r.answers) {
    if (!source_up_ || session != session_) continue;  // the source that asked is gone
    out->upstream.push_back(s.isOk() ? proto::LinkDeleted{id, true, ""}
                                     : proto::LinkDeleted{id, false, "io-error: " + s.message()});
  }
  if (!s.isOk()) {
    spdlog::warn("botm: cannot remove {}: {}{}", names_->format(name), s.message(),
                 r.release ? "; the name is not reused" : "");
  }
  // A referenced name is freed once its object is gone; one set aside while its DELETE
  // ran was free before and is free again, whatever the store said.
  if ((s.isOk() && r.release) || r.parked) names_->release(name);
}

// ---- the orphan sweep -------------------------------------------------------------

std::unordered_set<std::uint64_t> Dispatcher::heldNames() const {
  std::unordered_set<std::uint64_t> held;  // names of jobs, running or handed on
  for (const auto& [id, j] : jobs_) {
    if (j.name) held.insert(*j.name);
  }
  for (const auto& [name, r] : removing_) held.insert(name);
  return held;
}

void Dispatcher::sweep(const proto::LinkSweep& s, Actions* out) {
  if (!source_up_) return;
  if (objects_) {
    // Page by page through the worker; each page's names are checked when it comes.
    listings_.emplace(queueCall(s3::Call::Kind::kList, objects_->machinePrefix(machine_), {}),
                      Listing{session_, s.id, {}, 0});
    issueCalls(out);
    return;
  }
  const std::uint64_t files = listFiles(s, heldNames(), out);
  out->upstream.push_back(proto::LinkSwept{s.id, machine_, files});
  spdlog::info("botm: sweep {}: {} content file(s) listed to the url source", s.id, files);
}

std::uint64_t Dispatcher::listFiles(const proto::LinkSweep& s, const std::unordered_set<std::uint64_t>& held,
                                    Actions* out) {
  std::uint64_t files = 0;
  auto top = env_->listDir(content_dir_);
  for (const std::string& a : top.isOk() ? top.value() : std::vector<std::string>{}) {
    auto mid = env_->listDir(content_dir_ + "/" + a);
    if (!mid.isOk()) continue;
    for (const std::string& b : mid.value()) {
      auto leaves = env_->listDir(content_dir_ + "/" + a + "/" + b);
      if (!leaves.isOk()) continue;
      for (const std::string& leaf : leaves.value()) {
        const std::string name = a + "/" + b + "/" + leaf;
        auto n = names_->parse(name);  // a temporary file or anything else: not ours to list
        if (!n || held.count(*n)) continue;
        auto size = env_->fileSize(content_dir_ + "/" + name);
        if (!size.isOk()) continue;  // gone meanwhile, or a folder
        out->upstream.push_back(proto::LinkFile{s.id, machine_, name, size.value()});
        ++files;
      }
    }
  }
  return files;
}

// ListObjectsV2 under "<prefix><machine>/", one page per call. A listing that fails
// ends the sweep early (warned): the source then deletes only what was listed. Names
// held now are left out: a result that freed one went upstream before this page.
void Dispatcher::listed(std::uint64_t ticket, const s3::CallAnswer& a, Actions* out) {
  auto node = listings_.extract(ticket);
  Listing& l = node.mapped();
  if (!source_up_ || l.session != session_) return;  // the source that asked is gone
  bool more = false;
  if (!a.status.isOk()) {
    spdlog::warn("botm: sweep {}: listing the bucket: {}; the sweep ends here", l.sweep, a.status.message());
  } else {
    const std::string prefix = objects_->machinePrefix(machine_);
    const auto held = heldNames();
    for (const auto& o : a.page.objects) {
      if (o.key.compare(0, prefix.size(), prefix) != 0) continue;
      auto n = names_->parse(std::string_view(o.key).substr(prefix.size()));
      if (!n || held.count(*n)) continue;
      out->upstream.push_back(proto::LinkFile{l.sweep, machine_, names_->format(*n), o.size});
      ++l.files;
    }
    // A token that does not move is a broken store: the sweep ends.
    more = !a.page.next_token.empty() && a.page.next_token != l.token;
  }
  if (more) {
    l.token = a.page.next_token;
    listings_.emplace(queueCall(s3::Call::Kind::kList, objects_->machinePrefix(machine_), l.token), std::move(l));
    return;
  }
  out->upstream.push_back(proto::LinkSwept{l.sweep, machine_, l.files});
  spdlog::info("botm: sweep {}: {} content object(s) listed to the url source", l.sweep, l.files);
}

}  // namespace lcc::botm
