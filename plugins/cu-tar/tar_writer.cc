#include "tar_writer.h"

#include <cstring>

namespace lcc::plugins::cu_tar {
namespace {

constexpr std::size_t kBlock = 512;
constexpr std::uint64_t kMaxOctal11 = 077777777777ULL;  // 8 GiB - 1
const char kZeros[kBlock * 2] = {};

// Writes `v` as `width - 1` octal digits and a NUL into field.
void octal(char* field, std::size_t width, std::uint64_t v) {
  field[width - 1] = '\0';
  for (std::size_t i = width - 1; i-- > 0;) {
    field[i] = static_cast<char>('0' + (v & 7));
    v >>= 3;
  }
}

// One pax record: "<len> key=value\n", where len counts the whole record.
void paxRecord(std::string& out, std::string_view key, std::string_view value) {
  const std::size_t body = 1 + key.size() + 1 + value.size() + 1;  // ' ' key '=' value '\n'
  std::size_t len = body + 1;
  while (std::to_string(len).size() + body != len) len = std::to_string(len).size() + body;
  out += std::to_string(len);
  out += ' ';
  out += key;
  out += '=';
  out += value;
  out += '\n';
}

}  // namespace

constexpr std::size_t kParallelBlock = 128 * 1024;
constexpr std::size_t kDictionary = 32 * 1024;

GzipTarWriter::GzipTarWriter(ByteSink& sink, int level, std::size_t out_block, int threads)
    : sink_(sink), level_(level), threads_(threads < 1 ? 1 : threads), out_(out_block < 4096 ? 4096 : out_block, '\0') {}

GzipTarWriter::~GzipTarWriter() {
  for (auto& j : jobs_) j.wait();
  if (inited_) deflateEnd(&zs_);
}

Status GzipTarWriter::init() {
  if (threads_ > 1) {
    // The gzip header (RFC 1952): deflate, no name, no time, unknown OS.
    static const char kHeader[10] = {'\x1f', '\x8b', 8, 0, 0, 0, 0, 0, 0, '\xff'};
    crc_ = crc32(0, nullptr, 0);
    in_.reserve(kParallelBlock);
    Status s = sink_.write(std::string_view(kHeader, sizeof kHeader));
    if (!s.isOk()) failed_ = true;
    return s;
  }
  // windowBits 15 + 16: a gzip wrapper; memLevel 8 as gzip(1).
  if (deflateInit2(&zs_, level_, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    failed_ = true;
    return Status::internal("deflateInit2 failed");
  }
  inited_ = true;
  zs_.next_out = reinterpret_cast<Bytef*>(out_.data());
  zs_.avail_out = static_cast<uInt>(out_.size());
  return Status::ok();
}

Status GzipTarWriter::drain() {
  const std::size_t used = out_.size() - zs_.avail_out;
  if (used > 0) {
    Status s = sink_.write(std::string_view(out_.data(), used));
    if (!s.isOk()) {
      failed_ = true;
      return s;
    }
  }
  zs_.next_out = reinterpret_cast<Bytef*>(out_.data());
  zs_.avail_out = static_cast<uInt>(out_.size());
  return Status::ok();
}

Status GzipTarWriter::submit(bool last) {
  std::string block = std::move(in_);
  in_.clear();
  in_.reserve(kParallelBlock);
  std::string dict = dict_;
  if (block.size() >= kDictionary) {
    dict_ = block.substr(block.size() - kDictionary);
  } else {
    dict_ += block;
    if (dict_.size() > kDictionary) dict_.erase(0, dict_.size() - kDictionary);
  }
  const int level = level_;
  jobs_.push_back(std::async(std::launch::async, [block = std::move(block), dict = std::move(dict), level, last] {
    Block b;
    b.len = block.size();
    b.crc = crc32(crc32(0, nullptr, 0), reinterpret_cast<const Bytef*>(block.data()), static_cast<uInt>(block.size()));
    z_stream zs{};
    if (deflateInit2(&zs, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      b.ok = false;
      return b;
    }
    if (!dict.empty()) deflateSetDictionary(&zs, reinterpret_cast<const Bytef*>(dict.data()), static_cast<uInt>(dict.size()));
    b.out.resize(deflateBound(&zs, block.size()) + 64);
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(block.data()));
    zs.avail_in = static_cast<uInt>(block.size());
    zs.next_out = reinterpret_cast<Bytef*>(b.out.data());
    zs.avail_out = static_cast<uInt>(b.out.size());
    const int rc = deflate(&zs, last ? Z_FINISH : Z_SYNC_FLUSH);
    b.ok = last ? rc == Z_STREAM_END : (rc == Z_OK && zs.avail_in == 0);
    b.out.resize(zs.total_out);
    deflateEnd(&zs);
    return b;
  }));
  while (jobs_.size() > static_cast<std::size_t>(threads_)) LCC_RETURN_IF_ERROR(collect());
  return Status::ok();
}

Status GzipTarWriter::collect() {
  Block b = jobs_.front().get();
  jobs_.pop_front();
  if (!b.ok) {
    failed_ = true;
    return Status::internal("deflate of a block failed");
  }
  crc_ = crc32_combine(crc_, b.crc, static_cast<z_off_t>(b.len));
  total_ += b.len;
  Status s = sink_.write(b.out);
  if (!s.isOk()) failed_ = true;
  return s;
}

Status GzipTarWriter::deflateIn(const char* data, std::size_t n, int flush) {
  if (failed_) return Status::aborted("the tar stream failed before");
  bytes_in_ += n;
  if (threads_ > 1) {
    while (n > 0) {
      const std::size_t take = std::min(n, kParallelBlock - in_.size());
      in_.append(data, take);
      data += take;
      n -= take;
      if (in_.size() == kParallelBlock) LCC_RETURN_IF_ERROR(submit(false));
    }
    if (flush != Z_FINISH) return Status::ok();
    LCC_RETURN_IF_ERROR(submit(true));
    while (!jobs_.empty()) LCC_RETURN_IF_ERROR(collect());
    char trailer[8];
    for (int i = 0; i < 4; ++i) trailer[i] = static_cast<char>((crc_ >> (8 * i)) & 0xff);
    for (int i = 0; i < 4; ++i) trailer[4 + i] = static_cast<char>((total_ >> (8 * i)) & 0xff);
    Status s = sink_.write(std::string_view(trailer, sizeof trailer));
    if (!s.isOk()) failed_ = true;
    return s;
  }
  zs_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data));
  zs_.avail_in = static_cast<uInt>(n);
  for (;;) {
    int rc = deflate(&zs_, flush);
    if (rc == Z_STREAM_ERROR) {
      failed_ = true;
      return Status::internal("deflate failed");
    }
    if (zs_.avail_out == 0) {
      LCC_RETURN_IF_ERROR(drain());
      continue;
    }
    if (flush == Z_FINISH ? rc == Z_STREAM_END : zs_.avail_in == 0) break;
  }
  return Status::ok();
}

Status GzipTarWriter::writeHeader(std::string_view name, std::uint64_t size, std::int64_t mtime, char type) {
  char h[kBlock];
  std::memset(h, 0, sizeof h);
  // name[100] or prefix[155] '/' name[100].
  if (name.size() <= 100) {
    std::memcpy(h, name.data(), name.size());
  } else {
    std::size_t split = name.rfind('/', 155);
    if (split != std::string_view::npos && split > 0 && name.size() - split - 1 <= 100 && name.size() - split - 1 > 0) {
      std::memcpy(h + 345, name.data(), split);
      std::memcpy(h, name.data() + split + 1, name.size() - split - 1);
    } else {
      std::memcpy(h, name.data(), 100);  // the pax header before carries the full name
    }
  }
  octal(h + 100, 8, 0644);
  octal(h + 108, 8, 0);
  octal(h + 116, 8, 0);
  octal(h + 124, 12, size > kMaxOctal11 ? 0 : size);
  octal(h + 136, 12, mtime < 0 || static_cast<std::uint64_t>(mtime) > kMaxOctal11 ? 0 : static_cast<std::uint64_t>(mtime));
  h[156] = type;
  std::memcpy(h + 257, "ustar", 6);  // magic "ustar\0"
  h[263] = '0';
  h[264] = '0';
  std::memset(h + 148, ' ', 8);
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  octal(h + 148, 7, sum);  // six digits, NUL, then the space already there
  h[155] = ' ';
  return deflateIn(h, sizeof h, Z_NO_FLUSH);
}

Status GzipTarWriter::beginFile(std::string_view path, std::uint64_t size, std::int64_t mtime) {
  if (remaining_ != 0) return Status::internal("tar member started before the previous one ended");
  const bool name_fits = path.size() <= 100 || [&] {
    std::size_t split = path.rfind('/', 155);
    return split != std::string_view::npos && split > 0 && path.size() - split - 1 <= 100 && path.size() - split - 1 > 0;
  }();
  const bool mtime_fits = mtime >= 0 && static_cast<std::uint64_t>(mtime) <= kMaxOctal11;
  if (!name_fits || size > kMaxOctal11 || !mtime_fits) {
    std::string pax;
    if (!name_fits) paxRecord(pax, "path", path);
    if (size > kMaxOctal11) paxRecord(pax, "size", std::to_string(size));
    if (!mtime_fits) paxRecord(pax, "mtime", std::to_string(mtime));
    std::string pax_name = "PaxHeaders/";
    pax_name += path.substr(path.size() > 80 ? path.size() - 80 : 0);
    LCC_RETURN_IF_ERROR(writeHeader(pax_name.substr(0, 100), pax.size(), mtime_fits ? mtime : 0, 'x'));
    LCC_RETURN_IF_ERROR(deflateIn(pax.data(), pax.size(), Z_NO_FLUSH));
    const std::size_t pad = (kBlock - pax.size() % kBlock) % kBlock;
    LCC_RETURN_IF_ERROR(deflateIn(kZeros, pad, Z_NO_FLUSH));
  }
  LCC_RETURN_IF_ERROR(writeHeader(path, size, mtime, '0'));
  remaining_ = size;
  written_ = 0;
  return Status::ok();
}

Status GzipTarWriter::write(const char* data, std::size_t n) {
  if (n > remaining_) return Status::internal("tar member got more bytes than its size");
  remaining_ -= n;
  written_ += n;
  // zlib takes at most 4 GiB per call.
  while (n > 0) {
    const std::size_t part = n > (1u << 30) ? (1u << 30) : n;
    LCC_RETURN_IF_ERROR(deflateIn(data, part, Z_NO_FLUSH));
    data += part;
    n -= part;
  }
  return Status::ok();
}

Status GzipTarWriter::endFile() {
  if (remaining_ != 0) return Status::internal("tar member ended before its size");
  const std::size_t pad = (kBlock - written_ % kBlock) % kBlock;
  written_ = 0;
  return deflateIn(kZeros, pad, Z_NO_FLUSH);
}

Status GzipTarWriter::finish() {
  if (remaining_ != 0) return Status::internal("tar archive finished inside a member");
  LCC_RETURN_IF_ERROR(deflateIn(kZeros, sizeof kZeros, Z_FINISH));
  if (threads_ == 1) LCC_RETURN_IF_ERROR(drain());
  Status s = sink_.flush();
  if (!s.isOk()) failed_ = true;
  return s;
}

}  // namespace lcc::plugins::cu_tar
