// journal.cc — the durable intake journal (see journal.h).
//
// On-disk record (little-endian), kHeaderBytes = 20:
//   u32 magic   kMagic
//   u32 length  payload bytes
//   u64 position
//   u32 crc     CRC32C (Castagnoli, table-driven, written here) over the bytes
//               length|position|payload, so a flipped bit anywhere in a record
//               (header or payload) fails the check.
//   payload
// Segment files are named `<first-position, 20 digits>.jnl`; records inside a
// segment carry consecutive positions starting at that number. An empty segment
// whose name is N means "the next position is N": that is how positions stay
// monotonic when every record was trimmed.
#include "lcc/support/journal.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <vector>

namespace lcc {
namespace {

constexpr std::uint32_t kMagic = 0x4c434a31;  // "LCJ1"
constexpr std::size_t kHeaderBytes = 20;
constexpr std::size_t kPendingChunk = 1u << 20;
constexpr const char* kSuffix = ".jnl";

// --- CRC32C, slice-by-8, reflected polynomial 0x82F63B78 --------------------
struct Crc32cTables {
  std::array<std::array<std::uint32_t, 256>, 8> t{};
  Crc32cTables() {
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      t[0][i] = c;
    }
    for (std::uint32_t i = 0; i < 256; ++i) {
      for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
    }
  }
};

const Crc32cTables& crcTables() {
  static const Crc32cTables tables;
  return tables;
}

}  // namespace

std::uint32_t crc32cExtend(std::uint32_t crc, const void* data, std::size_t n) {
  const auto& t = crcTables().t;
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  while (n >= 8) {
    std::uint32_t lo = crc ^ (std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 |
                              std::uint32_t(p[3]) << 24);
    crc = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^ t[3][p[4]] ^
          t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) crc = (crc >> 8) ^ t[0][(crc ^ *p++) & 0xff];
  return ~crc;
}

namespace {

void putU32(char* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
void putU64(char* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
std::uint32_t getU32(const char* p) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
std::uint64_t getU64(const char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

std::uint32_t recordCrc(const char* header, std::string_view payload) {
  std::uint32_t c = crc32cExtend(0, header + 4, 12);  // length + position
  return crc32cExtend(c, payload.data(), payload.size());
}

std::string segmentName(JournalPos first) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%020" PRIu64 "%s", first, kSuffix);
  return buf;
}

// Parses "<digits>.jnl"; 0 when the name is not a segment.
JournalPos parseSegmentName(const std::string& name) {
  const std::size_t sl = std::strlen(kSuffix);
  if (name.size() <= sl || name.compare(name.size() - sl, sl, kSuffix) != 0) return 0;
  JournalPos v = 0;
  for (std::size_t i = 0; i + sl < name.size(); ++i) {
    char c = name[i];
    if (c < '0' || c > '9') return 0;
    if (v > (UINT64_MAX - 9) / 10) return 0;
    v = v * 10 + static_cast<JournalPos>(c - '0');
  }
  return v;
}

// Sequential reader over one segment with a read-ahead window.
class SegmentReader {
 public:
  SegmentReader(ReadableFile* file, std::uint64_t size) : file_(file), size_(size) {}

  std::uint64_t size() const { return size_; }

  // Reads exactly n bytes at off into out (resized). False on short read.
  Result<bool> readAt(std::uint64_t off, std::size_t n, std::string* out) {
    out->resize(n);
    if (n == 0) return true;
    if (off + n > size_) return false;
    if (off >= win_off_ && off + n <= win_off_ + win_.size()) {
      std::memcpy(out->data(), win_.data() + (off - win_off_), n);
      return true;
    }
    if (n >= kWindow / 2) return readDirect(off, n, out->data());
    // Refill the window starting at off.
    std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(kWindow, size_ - off));
    win_.resize(want);
    LCC_ASSIGN_OR_RETURN(bool ok, readDirect(off, want, win_.data()));
    if (!ok) {
      win_.clear();
      return false;
    }
    win_off_ = off;
    std::memcpy(out->data(), win_.data(), n);
    return true;
  }

 private:
  static constexpr std::size_t kWindow = 1 << 20;

  Result<bool> readDirect(std::uint64_t off, std::size_t n, char* buf) {
    std::size_t got = 0;
    while (got < n) {
      LCC_ASSIGN_OR_RETURN(std::size_t r, file_->read(off + got, n - got, buf + got));
      if (r == 0) return false;
      got += r;
    }
    return true;
  }

  ReadableFile* file_;
  std::uint64_t size_;
  std::string win_;
  std::uint64_t win_off_ = 0;
};

enum class RecordCheck { kGood, kBad };

struct ParsedRecord {
  JournalPos pos = 0;
  std::uint64_t total = 0;  // header + payload
};

// Checks the record at `off`. On kGood, *payload holds its payload.
Result<RecordCheck> checkRecord(SegmentReader& r, std::uint64_t off, std::uint64_t max_record, ParsedRecord* rec,
                                std::string* payload) {
  std::string header;
  LCC_ASSIGN_OR_RETURN(bool ok, r.readAt(off, kHeaderBytes, &header));
  if (!ok) return RecordCheck::kBad;
  if (getU32(header.data()) != kMagic) return RecordCheck::kBad;
  std::uint32_t len = getU32(header.data() + 4);
  if (len > max_record || off + kHeaderBytes + len > r.size()) return RecordCheck::kBad;
  LCC_ASSIGN_OR_RETURN(bool ok2, r.readAt(off + kHeaderBytes, len, payload));
  if (!ok2) return RecordCheck::kBad;
  if (recordCrc(header.data(), *payload) != getU32(header.data() + 16)) return RecordCheck::kBad;
  rec->pos = getU64(header.data() + 8);
  rec->total = kHeaderBytes + len;
  return RecordCheck::kGood;
}

// True when some checksum-valid record starts anywhere after `from`.
Result<bool> goodRecordAfter(SegmentReader& r, std::uint64_t from, std::uint64_t max_record) {
  char magic[4];
  putU32(magic, kMagic);
  std::string chunk;
  ParsedRecord rec;
  std::string payload;
  const std::size_t kChunk = 1 << 16;
  for (std::uint64_t base = from; base + kHeaderBytes <= r.size();) {
    std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk + 3, r.size() - base));
    LCC_ASSIGN_OR_RETURN(bool ok, r.readAt(base, n, &chunk));
    if (!ok) return false;
    for (std::size_t i = 0; i + 4 <= chunk.size(); ++i) {
      if (std::memcmp(chunk.data() + i, magic, 4) != 0) continue;
      LCC_ASSIGN_OR_RETURN(RecordCheck c, checkRecord(r, base + i, max_record, &rec, &payload));
      if (c == RecordCheck::kGood) return true;
    }
    if (n <= 3) break;
    base += n - 3;
  }
  return false;
}

struct Segment {
  JournalPos first = 0;
  std::string path;
};

class FileJournal final : public Journal {
 public:
  FileJournal(Env* env, std::string dir, JournalOptions options)
      : env_(env), dir_(std::move(dir)), options_(options) {}

  Status init() {
    LCC_RETURN_IF_ERROR(env_->createDirs(dir_));
    LCC_ASSIGN_OR_RETURN(auto names, env_->listDir(dir_));
    for (const auto& n : names) {
      JournalPos first = parseSegmentName(n);
      if (first == 0) continue;
      segments_.push_back(Segment{first, dir_ + "/" + n});
    }
    std::sort(segments_.begin(), segments_.end(), [](const Segment& a, const Segment& b) { return a.first < b.first; });
    std::uint64_t total = 0;
    for (const auto& s : segments_) {
      LCC_ASSIGN_OR_RETURN(std::uint64_t sz, env_->fileSize(s.path));
      total += sz;
    }
    size_bytes_ = total;
    if (segments_.empty()) {
      next_ = 1;
      setPositions(0);
      return Status::ok();
    }
    // Only the last segment can hold a torn tail; scan it to find the next position.
    Segment& last = segments_.back();
    LCC_ASSIGN_OR_RETURN(auto file, env_->openReadable(last.path));
    LCC_ASSIGN_OR_RETURN(std::uint64_t size, file->size());
    SegmentReader reader(file.get(), size);
    std::uint64_t off = 0;
    JournalPos expect = last.first;
    ParsedRecord rec;
    std::string payload;
    bool corrupt = false;
    while (off < size) {
      LCC_ASSIGN_OR_RETURN(RecordCheck c, checkRecord(reader, off, options_.max_record_bytes, &rec, &payload));
      if (c == RecordCheck::kGood && rec.pos == expect) {
        off += rec.total;
        ++expect;
        continue;
      }
      if (c == RecordCheck::kGood) {
        corrupt = true;  // a checksum-valid record out of sequence
        break;
      }
      LCC_ASSIGN_OR_RETURN(bool more, goodRecordAfter(reader, off + 1, options_.max_record_bytes));
      if (more) {
        corrupt = true;
      } else {
        open_torn_ = true;
        open_torn_detail_ = last.path + ": dropped a torn tail of " + std::to_string(size - off) + " bytes at offset " +
                            std::to_string(off);
        file.reset();
        LCC_RETURN_IF_ERROR(env_->truncate(last.path, off));
        size_bytes_ -= size - off;
      }
      break;
    }
    next_ = expect;
    if (corrupt) {
      // Keep the damaged bytes for replay to report; never append behind them. The
      // next position is past every position a valid record anywhere claims.
      JournalPos max_seen = expect - 1;
      LCC_ASSIGN_OR_RETURN(JournalPos m, maxPositionIn(reader));
      next_ = std::max(max_seen, m) + 1;
      start_new_segment_ = true;
    }
    setPositions(next_ - 1);
    return Status::ok();
  }

  Result<JournalReplayInfo> replay(JournalPos after,
                                   const std::function<Status(JournalPos, std::string_view)>& fn) override {
    JournalReplayInfo info;
    info.torn_tail = open_torn_;
    info.detail = open_torn_detail_;
    std::string payload;
    for (std::size_t i = 0; i < segments_.size(); ++i) {
      const Segment& seg = segments_[i];
      if (i + 1 < segments_.size() && segments_[i + 1].first - 1 <= after) continue;  // all records <= after
      LCC_ASSIGN_OR_RETURN(auto file, env_->openReadable(seg.path));
      LCC_ASSIGN_OR_RETURN(std::uint64_t size, file->size());
      if (i + 1 == segments_.size() && active_) size = std::min<std::uint64_t>(size, durable_size_);
      SegmentReader reader(file.get(), size);
      std::uint64_t off = 0;
      JournalPos expect = seg.first;
      ParsedRecord rec;
      while (off < size) {
        LCC_ASSIGN_OR_RETURN(RecordCheck c, checkRecord(reader, off, options_.max_record_bytes, &rec, &payload));
        if (c != RecordCheck::kGood || rec.pos != expect) {
          info.corruption = true;
          std::string what = c != RecordCheck::kGood ? "bad record (checksum, magic or length)"
                                                     : "record position " + std::to_string(rec.pos) +
                                                           " where " + std::to_string(expect) + " was expected";
          info.detail = seg.path + ": offset " + std::to_string(off) + ": " + what +
                        " followed by more data; replay stopped there";
          return info;
        }
        if (rec.pos > after) {
          Status s = fn(rec.pos, payload);
          if (!s.isOk()) return s;
          if (info.first == 0) info.first = rec.pos;
          info.last = rec.pos;
          ++info.records;
        }
        off += rec.total;
        ++expect;
      }
      // A gap between segments (a later segment not starting where this one ended)
      // means records went missing.
      if (i + 1 < segments_.size() && size > 0 && segments_[i + 1].first != expect) {
        info.corruption = true;
        info.detail = seg.path + ": ends at position " + std::to_string(expect - 1) + " but the next segment starts at " +
                      std::to_string(segments_[i + 1].first) + "; replay stopped there";
        return info;
      }
    }
    return info;
  }

  Result<JournalPos> append(std::string_view payload) override {
    if (!failed_.isOk()) return failed_;
    if (payload.size() > options_.max_record_bytes || payload.size() > UINT32_MAX) {
      return Status::invalidArgument("journal record of " + std::to_string(payload.size()) +
                                     " bytes exceeds the limit of " + std::to_string(options_.max_record_bytes));
    }
    const JournalPos pos = next_++;
    char header[kHeaderBytes];
    putU32(header, kMagic);
    putU32(header + 4, static_cast<std::uint32_t>(payload.size()));
    putU64(header + 8, pos);
    putU32(header + 16, recordCrc(header, payload));
    std::string& chunk = pendingChunkFor(kHeaderBytes + payload.size());
    chunk.append(header, kHeaderBytes);
    chunk.append(payload.data(), payload.size());
    pending_bytes_ += kHeaderBytes + payload.size();
    last_.store(pos, std::memory_order_release);
    return pos;
  }

  Result<JournalPos> commit() override {
    if (!failed_.isOk()) return failed_;
    if (pending_bytes_ == 0) return durable_.load(std::memory_order_acquire);
    const JournalPos first_pending = durable_.load(std::memory_order_acquire) + 1;
    Status s = ensureActive(first_pending);
    // Busy (no descriptor to open the segment): nothing was written; the records stay
    // pending for the next commit and the journal stays usable.
    if (s.isBusy()) return s;
    for (std::size_t i = 0; s.isOk() && i < pending_.size(); ++i) s = active_->append(pending_[i]);
    if (s.isOk()) s = active_->sync();
    if (!s.isOk()) {
      failed_ = s.withContext("journal " + dir_ + " failed (sticky)");
      return failed_;
    }
    size_bytes_ += pending_bytes_;
    durable_size_ = active_->size();
    // Keep one chunk of the usual size for the next records; a chunk grown by one large
    // record goes.
    pending_.resize(std::min<std::size_t>(pending_.size(), 1));
    if (!pending_.empty() && pending_.front().capacity() > 2 * kPendingChunk) pending_.clear();
    if (!pending_.empty()) pending_.front().clear();
    pending_bytes_ = 0;
    durable_.store(next_ - 1, std::memory_order_release);
    if (active_->size() >= options_.segment_bytes) {
      Status cs = active_->close();
      active_.reset();
      if (!cs.isOk()) {
        failed_ = cs.withContext("journal " + dir_ + " failed (sticky)");
        return failed_;
      }
    }
    return durable_.load(std::memory_order_acquire);
  }

  Status trimUpTo(JournalPos pos) override {
    if (!failed_.isOk()) return failed_;
    pos = std::min<JournalPos>(pos, durable_.load(std::memory_order_acquire));
    if (pos == 0 || segments_.empty()) return Status::ok();
    bool removed = false;
    // Every segment but the last: its records end just before the next segment starts.
    while (segments_.size() > 1 && segments_[1].first - 1 <= pos) {
      LCC_RETURN_IF_ERROR(removeSegment(segments_.front()));
      segments_.erase(segments_.begin());
      removed = true;
    }
    // The last segment: when all of its records are covered, start an empty segment
    // named after the next position first, so positions survive a restart.
    const Segment& last = segments_.back();
    const JournalPos durable = durable_.load(std::memory_order_acquire);
    if (segments_.size() == 1 && durable >= last.first && durable <= pos) {
      if (active_) {
        Status cs = active_->close();
        active_.reset();
        if (!cs.isOk()) return fail(cs);
      }
      Status s = createSegment(durable + 1);
      if (s.isBusy()) return s;  // no descriptor: trimmed next time
      if (!s.isOk()) return fail(s);
      LCC_RETURN_IF_ERROR(removeSegment(segments_.front()));
      segments_.erase(segments_.begin());
      removed = true;
    }
    if (removed) {
      Status s = env_->syncDir(dir_);
      if (!s.isOk() && !s.isBusy()) return fail(s);
      if (!s.isOk()) return s;
    }
    return Status::ok();
  }

  Status skipTo(JournalPos next) override {
    if (!failed_.isOk()) return failed_;
    if (pending_bytes_ > 0) return Status::invalidArgument("journal " + dir_ + ": skipTo() with records not committed");
    next = std::max(next, next_);
    if (active_) {
      Status cs = active_->close();
      active_.reset();
      if (!cs.isOk()) return fail(cs);
    }
    for (const auto& seg : segments_) {
      if (Status rs = removeSegment(seg); !rs.isOk()) return fail(rs);
    }
    segments_.clear();
    // An empty segment named `next` (its folder synced, the removals with it): positions
    // go on from there after a restart too.
    if (Status cs = createSegment(next); !cs.isOk()) return fail(cs);
    next_ = next;
    setPositions(next - 1);
    start_new_segment_ = false;
    return Status::ok();
  }

  JournalPos lastPosition() const override { return last_.load(std::memory_order_acquire); }
  JournalPos durablePosition() const override { return durable_.load(std::memory_order_acquire); }
  std::uint64_t sizeBytes() const override { return size_bytes_.load(std::memory_order_acquire); }

 private:
  Status fail(const Status& s) {
    failed_ = s.withContext("journal " + dir_ + " failed (sticky)");
    return failed_;
  }

  void setPositions(JournalPos p) {
    last_.store(p, std::memory_order_release);
    durable_.store(p, std::memory_order_release);
  }

  Result<JournalPos> maxPositionIn(SegmentReader& reader) {
    // Scans byte by byte for checksum-valid records (only after corruption).
    JournalPos m = 0;
    ParsedRecord rec;
    std::string payload;
    char magic[4];
    putU32(magic, kMagic);
    std::string head;
    for (std::uint64_t off = 0; off + kHeaderBytes <= reader.size(); ++off) {
      LCC_ASSIGN_OR_RETURN(bool ok, reader.readAt(off, 4, &head));
      if (!ok || std::memcmp(head.data(), magic, 4) != 0) continue;
      LCC_ASSIGN_OR_RETURN(RecordCheck c, checkRecord(reader, off, options_.max_record_bytes, &rec, &payload));
      if (c == RecordCheck::kGood) m = std::max(m, rec.pos);
    }
    return m;
  }

  // Makes sure records starting at `first` go to an open segment.
  // The chunk the next record of `bytes` goes into; a new one when the last is full.
  std::string& pendingChunkFor(std::size_t bytes) {
    if (pending_.empty() || (!pending_.back().empty() && pending_.back().size() + bytes > kPendingChunk)) {
      pending_.emplace_back();
      pending_.back().reserve(std::max(kPendingChunk, bytes));
    }
    return pending_.back();
  }

  Status ensureActive(JournalPos first) {
    if (active_) return Status::ok();
    if (!segments_.empty() && !start_new_segment_) {
      Segment& last = segments_.back();
      LCC_ASSIGN_OR_RETURN(std::uint64_t sz, env_->fileSize(last.path));
      // Reuse the last segment when it is where `first` belongs: it is empty and
      // named `first`, or it is below the size limit (its records end at first-1).
      if ((sz == 0 && last.first == first) || (sz > 0 && sz < options_.segment_bytes)) {
        LCC_ASSIGN_OR_RETURN(active_, env_->openWritable(last.path, OpenMode::kAppend));
        durable_size_ = active_->size();
        return Status::ok();
      }
    }
    LCC_RETURN_IF_ERROR(createSegment(first));
    start_new_segment_ = false;
    return Status::ok();
  }

  // Creates segment `first` as the active one and makes its name durable.
  Status createSegment(JournalPos first) {
    Segment seg{first, dir_ + "/" + segmentName(first)};
    if (!segments_.empty() && segments_.back().path == seg.path) {
      LCC_ASSIGN_OR_RETURN(active_, env_->openWritable(seg.path, OpenMode::kAppend));
    } else {
      LCC_ASSIGN_OR_RETURN(active_, env_->openWritable(seg.path, OpenMode::kTruncate));
      segments_.push_back(seg);
    }
    durable_size_ = active_->size();
    Status s = env_->syncDir(dir_);
    // Not durable by name yet: the next try opens it again and syncs the folder.
    if (!s.isOk()) active_.reset();
    return s;
  }

  Status removeSegment(const Segment& seg) {
    auto sz = env_->fileSize(seg.path);
    Status s = env_->removeFile(seg.path);
    if (!s.isOk() && !s.isNotFound()) return s;
    if (sz.isOk()) size_bytes_ -= std::min<std::uint64_t>(size_bytes_.load(), sz.value());
    return Status::ok();
  }

  Env* env_;
  std::string dir_;
  JournalOptions options_;
  std::vector<Segment> segments_;
  std::unique_ptr<WritableFile> active_;
  std::uint64_t durable_size_ = 0;  // bytes of the active segment known written
  bool start_new_segment_ = false;
  JournalPos next_ = 1;
  // Records appended since the last commit, in chunks of about kPendingChunk bytes: a
  // store's redo journal holds up to its whole unsynced window here (64 MiB for the Kyoto
  // plugin), and one growing string would double and copy, holding old and new copies
  // at once (the peak of qm_bench fill, heaptrack).
  std::vector<std::string> pending_;
  std::size_t pending_bytes_ = 0;
  Status failed_;
  bool open_torn_ = false;
  std::string open_torn_detail_;
  std::atomic<JournalPos> last_{0};
  std::atomic<JournalPos> durable_{0};
  std::atomic<std::uint64_t> size_bytes_{0};
};

}  // namespace

Result<std::unique_ptr<Journal>> Journal::open(Env* env, const std::string& dir, const JournalOptions& options) {
  if (env == nullptr) return Status::invalidArgument("journal: no Env");
  if (options.segment_bytes == 0) return Status::invalidArgument("journal: segment_bytes must be > 0");
  auto j = std::make_unique<FileJournal>(env, dir, options);
  LCC_RETURN_IF_ERROR(j->init().withContext("journal " + dir));
  return std::unique_ptr<Journal>(std::move(j));
}

}  // namespace lcc
