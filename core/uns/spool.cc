#include "uns/spool.h"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <spdlog/spdlog.h>

#include "proto/uns_qm.h"

namespace lcc::uns {

namespace {

const JournalOptions kJournalOptions{4ull << 20, 1ull << 30};

// One record, parsed (the formats are in spool.h).
struct Record {
  char tag = 0;  // '<' a whole set, 'B', 'P', 'E', 'A'; 0 when not a spool record
  JournalPos begin = 0;
  std::uint64_t id = 0, count = 0;
  ProviderId pid = 0;
  SetKind kind = SetKind::kPartial;
  std::string_view urls;  // 'P'
};

// A decimal number ended by `stop`, taken from the front of `s`.
bool takeNumber(std::string_view& s, char stop, std::uint64_t& v) {
  const auto end = s.find(stop);
  if (end == std::string_view::npos || end == 0) return false;
  const auto r = std::from_chars(s.data(), s.data() + end, v);
  if (r.ec != std::errc() || r.ptr != s.data() + end) return false;
  s.remove_prefix(end + 1);
  return true;
}

Record parseRecord(std::string_view p) {
  Record r;
  if (p.empty()) return r;
  if (p[0] == '<') {
    r.id = proto::peekSetId(p);
    r.tag = r.id != 0 ? '<' : 0;
    return r;
  }
  if (p.size() < 2 || p[1] != ' ') return r;
  const char tag = p[0];
  p.remove_prefix(2);
  std::uint64_t a = 0, b = 0;
  bool ok = false;
  switch (tag) {
    case 'B':
      ok = takeNumber(p, ' ', a) && a > 0 && a <= UINT32_MAX && p.size() == 2 && (p[0] == 'p' || p[0] == 'f') &&
           p[1] == '\n';
      r.pid = static_cast<ProviderId>(a);
      r.kind = ok && p[0] == 'f' ? SetKind::kFull : SetKind::kPartial;
      break;
    case 'P':
      ok = takeNumber(p, '\n', r.begin);
      r.urls = p;
      break;
    case 'E':
      ok = takeNumber(p, ' ', r.begin) && takeNumber(p, ' ', a) && takeNumber(p, '\n', b) && p.empty() && a > 0;
      r.id = a;
      r.count = b;
      break;
    case 'A':
      ok = takeNumber(p, '\n', r.begin) && p.empty();
      break;
    default:
      break;
  }
  if (ok) r.tag = tag;
  return r;
}

SpooledSet wholeSet(JournalPos pos, std::uint64_t id, std::uint64_t bytes) {
  SpooledSet s;
  s.first = s.pos = pos;
  s.id = id;
  s.bytes = bytes;
  return s;
}

}  // namespace

SpooledSet Spool::partsSet(JournalPos first, JournalPos last, std::uint64_t id, std::uint64_t bytes,
                           const OpenSet& o, std::uint64_t count) {
  SpooledSet s = wholeSet(last, id, bytes);
  s.first = first;
  s.in_parts = true;
  s.pid = o.pid;
  s.kind = o.kind;
  s.count = count;
  return s;
}

Status SetIds::open(std::uint64_t highest) {
  if (env_->exists(path_)) {
    auto text = env_->readFile(path_);
    if (!text.isOk()) return text.status();
    std::uint64_t v = 0;
    std::string_view t = text.value();
    while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.remove_suffix(1);
    const auto r = std::from_chars(t.data(), t.data() + t.size(), v);
    if (r.ec != std::errc() || r.ptr != t.data() + t.size()) return Status::corruption(path_ + ": not a set id");
    next_ = std::max(next_, v);
  }
  next_ = std::max(next_, highest + 1);
  return reserve();
}

Status SetIds::reserve() {
  limit_ = next_ + block_;
  return env_->writeFileAtomic(path_, std::to_string(limit_) + "\n");
}

Result<std::uint64_t> SetIds::next() {
  if (next_ >= limit_) LCC_RETURN_IF_ERROR(reserve());
  last_ = next_;
  return next_++;
}

Spool::Spool(Env* env, SpoolOptions options) : env_(env), opt_(std::move(options)) {}
Spool::~Spool() = default;

Status Spool::open() {
  auto j = Journal::open(env_, opt_.dir, kJournalOptions);
  if (!j.isOk()) return j.status().withContext("uns spool");
  journal_ = std::move(j).value();
  failed_ = false;
  if (Status s = load({}); !s.isOk()) return s.withContext("uns spool replay");
  if (!sets_.empty()) spdlog::info("uns spool: {} sets ({} bytes) wait from an earlier run", sets_.size(), bytes());
  return Status::ok();
}

Status Spool::reopen() {
  std::map<JournalPos, std::string> cached;
  for (auto& s : sets_) {
    if (!s.xml.empty()) cached[s.pos] = std::move(s.xml);
  }
  journal_.reset();
  auto j = Journal::open(env_, opt_.dir, kJournalOptions);
  if (!j.isOk()) return j.status();
  journal_ = std::move(j).value();
  failed_ = false;
  if (Status s = load(std::move(cached)); !s.isOk()) {
    journal_.reset();
    return s;
  }
  spdlog::info("uns spool: reopened after a write failure; {} sets wait", sets_.size());
  return Status::ok();
}

// Rebuilds the lists from the journal. Whole sets keep their cached text when the
// record still holds it.
Status Spool::load(std::map<JournalPos, std::string> cached) {
  sets_.clear();
  open_.clear();
  firsts_.clear();
  cut_.clear();
  cache_bytes_ = unwritten_ = 0;
  bytes_ = 0;
  cut_bytes_ = 0;
  auto info = journal_->replay(0, [&](JournalPos pos, std::string_view payload) {
    const Record r = parseRecord(payload);
    auto open = open_.find(r.begin);
    const bool known = r.tag != '<' && r.tag != 'B' && open != open_.end();
    if (r.tag == '<') {
      SpooledSet s = wholeSet(pos, r.id, payload.size());
      if (auto it = cached.find(pos); it != cached.end() && it->second == payload) s.xml = std::move(it->second);
      highest_id_ = std::max(highest_id_, r.id);
      insert(std::move(s));
    } else if (r.tag == 'B') {
      open_[pos] = OpenSet{r.pid, r.kind, payload.size(), pos};
      firsts_.insert(pos);
      bytes_ += payload.size();
    } else if ((r.tag == 'P' || r.tag == 'A') && known) {
      open->second.bytes += payload.size();
      open->second.last = pos;
      bytes_ += payload.size();
      if (r.tag == 'A') dropOpen(r.begin, pos);
    } else if (r.tag == 'E' && known) {
      SpooledSet s = partsSet(r.begin, pos, r.id, open->second.bytes + payload.size(), open->second, r.count);
      bytes_ += payload.size();
      open_.erase(open);
      highest_id_ = std::max(highest_id_, r.id);
      insert(std::move(s));
    } else if (r.tag == 0) {  // P, A, E of a set whose B was trimmed (cut off, or acked): nothing to do
      spdlog::error("uns spool: record {} is not a spool record; skipped", pos);
    }
    return Status::ok();
  });
  if (!info.isOk()) return info.status();
  if (info->torn_tail) spdlog::warn("uns spool: a torn last record was dropped ({})", info->detail);
  if (info->corruption) reportCorruption(info->detail);
  while (!open_.empty()) {
    const auto& [begin, o] = *open_.begin();
    spdlog::warn("uns spool: a set in parts (record {}, {} bytes) was not finished; dropped, it was never accepted",
                 begin, o.bytes);
    dropOpen(begin, o.last);
  }
  std::stable_sort(sets_.begin(), sets_.end(), [](const SpooledSet& a, const SpooledSet& b) { return a.id < b.id; });
  std::sort(cut_.begin(), cut_.end());
  trim();
  return Status::ok();
}

void Spool::insert(SpooledSet s) {
  if (!s.in_parts) {
    firsts_.insert(s.first);
    bytes_ += s.bytes;
  }
  if (!s.xml.empty()) {
    if (cache_bytes_ + s.bytes <= opt_.cache_budget) {
      cache_bytes_ += s.bytes;
    } else {
      s.xml = std::string();
    }
  }
  auto at = sets_.end();
  while (at != sets_.begin() && std::prev(at)->id > s.id) --at;
  sets_.insert(at, std::move(s));
  sets_count_ = sets_.size();
}

void Spool::erase(std::size_t i) {
  SpooledSet& s = sets_[i];
  bytes_ -= std::min(bytes_.load(), s.bytes);
  if (!s.xml.empty()) cache_bytes_ -= std::min(cache_bytes_, s.bytes);
  if (auto it = firsts_.find(s.first); it != firsts_.end()) firsts_.erase(it);
  sets_.erase(sets_.begin() + static_cast<std::ptrdiff_t>(i));
  sets_count_ = sets_.size();
  trim();
}

void Spool::popFront() { erase(0); }

bool Spool::full(std::uint64_t more) const { return bytes_.load() + cut_bytes_.load() + more >= opt_.limit; }

Status Spool::fail(const Status& s) {
  failed_ = true;
  for (const auto& [begin, o] : open_) {
    bytes_ -= std::min(bytes_.load(), o.bytes);
    if (auto it = firsts_.find(begin); it != firsts_.end()) firsts_.erase(it);
  }
  open_.clear();  // their parts may be lost: every open set is cut off
  return s;
}

Status Spool::append(std::string_view payload, JournalPos* pos) {
  if (!usable()) return Status::ioError("the spool failed earlier");
  auto r = journal_->append(payload);
  if (!r.isOk()) return fail(r.status());
  unwritten_ += payload.size();
  *pos = r.value();
  return Status::ok();
}

Status Spool::commit() {
  if (!usable()) return Status::ioError("the spool failed earlier");
  auto r = journal_->commit();
  if (!r.isOk()) return fail(r.status());
  unwritten_ = 0;
  return Status::ok();
}

Result<SpooledSet> Spool::appendWhole(std::uint64_t id, std::string_view xml) {
  JournalPos pos = 0;
  LCC_RETURN_IF_ERROR(append(xml, &pos));
  highest_id_ = std::max(highest_id_, id);
  return wholeSet(pos, id, xml.size());
}

Result<JournalPos> Spool::appendBegin(ProviderId pid, SetKind kind) {
  std::string rec = "B " + std::to_string(pid) + (kind == SetKind::kFull ? " f\n" : " p\n");
  JournalPos pos = 0;
  LCC_RETURN_IF_ERROR(append(rec, &pos));
  open_[pos] = OpenSet{pid, kind, rec.size(), pos};
  firsts_.insert(pos);
  bytes_ += rec.size();
  return pos;
}

Status Spool::appendPart(JournalPos begin, std::string urls_xml) {
  if (!open_.count(begin)) return Status::notFound("the set is not open in the spool");
  if (full(0)) return Status::busy("the spool is full");
  urls_xml.insert(0, "P " + std::to_string(begin) + "\n");
  JournalPos pos = 0;
  LCC_RETURN_IF_ERROR(append(urls_xml, &pos));
  OpenSet& o = open_[begin];
  o.bytes += urls_xml.size();
  o.last = pos;
  bytes_ += urls_xml.size();
  return unwritten_ >= opt_.write_bytes ? commit() : Status::ok();
}

Result<SpooledSet> Spool::appendEnd(JournalPos begin, std::uint64_t id, std::uint64_t count) {
  auto it = open_.find(begin);
  if (it == open_.end()) return Status::notFound("the set is not open in the spool");
  const std::string rec = "E " + std::to_string(begin) + " " + std::to_string(id) + " " + std::to_string(count) + "\n";
  const OpenSet o = it->second;
  JournalPos pos = 0;
  LCC_RETURN_IF_ERROR(append(rec, &pos));
  open_.erase(begin);  // its first record stays in firsts_: insert() does not add it again
  bytes_ += rec.size();
  highest_id_ = std::max(highest_id_, id);
  return partsSet(begin, pos, id, o.bytes + rec.size(), o, count);
}

void Spool::abort(JournalPos begin) {
  if (!open_.count(begin)) return;
  JournalPos last = open_[begin].last;
  if (usable()) {
    const std::string rec = "A " + std::to_string(begin) + "\n";
    // Synced so that the journal can be trimmed past it. A failure (which cuts off
    // every open set) only leaves a B without its E, skipped all the same.
    if (append(rec, &last).isOk() && commit().isOk()) {
      open_[begin].bytes += rec.size();
      bytes_ += rec.size();
    }
  }
  dropOpen(begin, last);
  trim();
}

void Spool::dropOpen(JournalPos begin, JournalPos last) {
  auto it = open_.find(begin);
  if (it == open_.end()) return;
  bytes_ -= std::min(bytes_.load(), it->second.bytes);
  cut_.emplace_back(last, it->second.bytes);
  cut_bytes_ += it->second.bytes;
  if (auto f = firsts_.find(begin); f != firsts_.end()) firsts_.erase(f);
  open_.erase(it);
}

// Drops the journal's records below the first one still needed; the bytes of sets cut
// off that lie there stop counting.
void Spool::trim() {
  if (!usable()) return;
  const JournalPos durable = journal_->durablePosition();
  const JournalPos upto = std::min(durable, firsts_.empty() ? durable : *firsts_.begin() - 1);
  if (upto == 0) return;
  if (Status s = journal_->trimUpTo(upto); !s.isOk()) spdlog::warn("uns spool: trim failed: {}", s.toString());
  while (!cut_.empty() && cut_.front().first <= upto) {
    cut_bytes_ -= std::min(cut_bytes_.load(), cut_.front().second);
    cut_.pop_front();
  }
}

void Spool::reportCorruption(const std::string& detail) {
  ++corruptions_;
  spdlog::error("uns spool: corruption: {}; accepted sets may be lost, raising cache-crash", detail);
  if (opt_.on_corrupt) opt_.on_corrupt(detail);
}

Status Spool::loadTexts(std::size_t from, std::size_t n) {
  const std::size_t end = std::min(sets_.size(), from + n);
  std::size_t i = from;
  while (i < end && (sets_[i].in_parts || !sets_[i].xml.empty())) ++i;
  if (i == end) return Status::ok();
  if (!journal_) return Status::ioError("the spool is closed after a write failure");
  // Sets are in id order, which is the journal's order except after a link drop
  // spooled older sets late: read from the lowest position wanted.
  JournalPos low = sets_[i].pos;
  for (std::size_t k = i; k < end; ++k) low = std::min(low, sets_[k].pos);
  std::map<JournalPos, std::size_t> wanted;
  for (std::size_t k = i; k < end; ++k) {
    if (!sets_[k].in_parts && sets_[k].xml.empty()) wanted[sets_[k].pos] = k;
  }
  const JournalPos high = wanted.rbegin()->first;
  auto r = journal_->replay(low - 1, [&](JournalPos pos, std::string_view payload) {
    if (auto it = wanted.find(pos); it != wanted.end()) {
      sets_[it->second].xml.assign(payload);
      cache_bytes_ += payload.size();
    }
    return pos >= high ? Status::aborted("enough") : Status::ok();
  });
  if (!r.isOk() && r.status().code() != StatusCode::kAborted) return r.status();
  for (const auto& [pos, k] : wanted) {
    if (sets_[k].xml.empty()) return Status::corruption("spooled set " + std::to_string(sets_[k].id) + " is gone");
  }
  return Status::ok();
}

Status Spool::readParts(const SpooledSet& s, JournalPos* after, std::uint64_t budget,
                        const std::function<void(std::string_view)>& fn) {
  if (!journal_) return Status::ioError("the spool is closed after a write failure");
  std::uint64_t got = 0;
  auto r = journal_->replay(*after, [&](JournalPos pos, std::string_view payload) {
    if (pos > s.pos) return Status::aborted("past its end");
    *after = pos;
    const Record rec = parseRecord(payload);
    if (rec.tag == 'P' && rec.begin == s.first) {
      fn(rec.urls);
      got += rec.urls.size();
    }
    if (pos == s.pos) return Status::aborted("its end");
    return got >= budget ? Status::aborted("enough for now") : Status::ok();
  });
  if (!r.isOk() && r.status().code() != StatusCode::kAborted) return r.status();
  if (*after < s.pos && got < budget) {
    return Status::corruption("spooled set " + std::to_string(s.id) + " is gone before its end");
  }
  return Status::ok();
}

}  // namespace lcc::uns
