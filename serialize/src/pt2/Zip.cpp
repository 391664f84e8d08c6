//===- Zip.cpp - ZIP reading and PyTorchStreamWriter-style writing --------===//
//
// Field layouts follow PKWARE's APPNOTE; the writer reproduces what miniz
// writes for PyTorchStreamWriter (see Zip.h), including its 'FB' padding
// extra field and its choice of when a ZIP64 extra field is needed.
//
//===----------------------------------------------------------------------===//
#include "graft/serialize/Zip.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace graft {

namespace {

constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kEnd64Sig = 0x06064b50;
constexpr uint32_t kEnd64LocatorSig = 0x07064b50;
constexpr uint32_t kDescriptorSig = 0x08074b50;
constexpr uint64_t kU32Max = 0xFFFFFFFFull;
constexpr std::size_t kLocalHeaderSize = 30;
constexpr std::size_t kCentralHeaderSize = 46;
constexpr std::size_t kEndSize = 22;
constexpr uint64_t kAlignment = 64;
constexpr std::size_t kIoChunk = 1 << 20;

uint16_t le16(const uint8_t *p) {
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
}
uint32_t le32(const uint8_t *p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}
uint64_t le64(const uint8_t *p) {
  return static_cast<uint64_t>(le32(p)) | (static_cast<uint64_t>(le32(p + 4)) << 32);
}
void put16(std::string &s, uint16_t v) {
  s.push_back(static_cast<char>(v & 0xFF));
  s.push_back(static_cast<char>(v >> 8));
}
void put32(std::string &s, uint32_t v) {
  for (int i = 0; i < 4; ++i)
    s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
void put64(std::string &s, uint64_t v) {
  for (int i = 0; i < 8; ++i)
    s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

} // namespace

uint32_t crc32(const void *data, std::size_t size, uint32_t crc) {
  const auto *p = static_cast<const Bytef *>(data);
  // zlib's length parameter is a uInt; feed large buffers in pieces.
  while (size > 0) {
    uInt n = static_cast<uInt>(std::min<std::size_t>(size, 1u << 30));
    crc = static_cast<uint32_t>(::crc32(crc, p, n));
    p += n;
    size -= n;
  }
  return crc;
}

uint64_t hashCombine(uint64_t seed, uint64_t value) {
  return seed ^ (value + 0x9e3779b9ull + (seed << 6) + (seed >> 2));
}

//===----------------------------------------------------------------------===//
// ZipReader
//===----------------------------------------------------------------------===//

Expected<std::shared_ptr<ZipReader>> ZipReader::open(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Diagnostic::error("cannot open '" + path + "': " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    std::string why = std::strerror(errno);
    ::close(fd);
    return Diagnostic::error("cannot stat '" + path + "': " + why);
  }
  std::shared_ptr<ZipReader> z(new ZipReader());
  z->path_ = path;
  z->displayName_ = path;
  z->fd_ = fd;
  z->base_ = 0;
  z->length_ = static_cast<uint64_t>(st.st_size);
  GRAFT_CHECK_OK(z->parse());
  return z;
}

Expected<std::shared_ptr<ZipReader>> ZipReader::open(const std::string &path, uint64_t base,
                                                     uint64_t length, std::string displayName) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Diagnostic::error("cannot open '" + path + "': " + std::strerror(errno));
  std::shared_ptr<ZipReader> z(new ZipReader());
  z->path_ = path;
  z->displayName_ = std::move(displayName);
  z->fd_ = fd;
  z->base_ = base;
  z->length_ = length;
  GRAFT_CHECK_OK(z->parse());
  return z;
}

ZipReader::~ZipReader() {
  if (fd_ >= 0)
    ::close(fd_);
}

Diagnostic ZipReader::error(const std::string &what) const {
  return Diagnostic::error(displayName_ + ": " + what);
}

Status ZipReader::readAt(uint64_t offset, void *dst, std::size_t size) const {
  if (offset > length_ || size > length_ - offset)
    return error("truncated archive: needs " + std::to_string(size) + " bytes at offset " +
                 std::to_string(offset) + " but the archive has " + std::to_string(length_) +
                 " bytes");
  if (fd_ < 0) { // in memory: mapped_ holds the archive
    std::memcpy(dst, mapped_->data() + offset, size);
    return okStatus();
  }
  auto *out = static_cast<uint8_t *>(dst);
  uint64_t pos = base_ + offset;
  while (size > 0) {
    ssize_t n = ::pread(fd_, out, std::min<std::size_t>(size, kIoChunk), static_cast<off_t>(pos));
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return error(std::string("read failed: ") + std::strerror(errno));
    }
    if (n == 0)
      return error("truncated archive: unexpected end of file at offset " +
                   std::to_string(pos - base_));
    out += n;
    pos += static_cast<uint64_t>(n);
    size -= static_cast<std::size_t>(n);
  }
  return okStatus();
}

Status ZipReader::parse() {
  if (length_ < kEndSize)
    return error("not a zip archive (or truncated): " + std::to_string(length_) +
                 " bytes is too short for an end-of-central-directory record");
  // The end record sits in the last 22 + 65535 (comment) bytes.
  uint64_t tail = std::min<uint64_t>(length_, kEndSize + 0xFFFF);
  std::vector<uint8_t> buf(static_cast<std::size_t>(tail));
  GRAFT_CHECK_OK(readAt(length_ - tail, buf.data(), buf.size()));
  int64_t found = -1;
  for (int64_t i = static_cast<int64_t>(tail - kEndSize); i >= 0; --i) {
    if (le32(&buf[static_cast<std::size_t>(i)]) == kEndSig) {
      // A real end record's comment runs exactly to the end of the file.
      uint16_t commentLen = le16(&buf[static_cast<std::size_t>(i) + 20]);
      if (static_cast<uint64_t>(i) + kEndSize + commentLen == tail) {
        found = i;
        break;
      }
    }
  }
  if (found < 0)
    return error("not a zip archive (or truncated): no end-of-central-directory record");
  uint64_t endOffset = length_ - tail + static_cast<uint64_t>(found);
  const uint8_t *e = &buf[static_cast<std::size_t>(found)];
  uint64_t count = le16(e + 10);
  uint64_t cdSize = le32(e + 12);
  uint64_t cdOffset = le32(e + 16);

  // ZIP64: a locator right before the end record points at the ZIP64 end record.
  if (endOffset >= 20) {
    uint8_t loc[20];
    GRAFT_CHECK_OK(readAt(endOffset - 20, loc, sizeof loc));
    if (le32(loc) == kEnd64LocatorSig) {
      uint64_t end64 = le64(loc + 8);
      uint8_t rec[56];
      GRAFT_CHECK_OK(readAt(end64, rec, sizeof rec));
      if (le32(rec) != kEnd64Sig)
        return error("corrupt archive: ZIP64 end-of-central-directory record not found at offset " +
                     std::to_string(end64));
      count = le64(rec + 32);
      cdSize = le64(rec + 40);
      cdOffset = le64(rec + 48);
    }
  }
  if (cdOffset > length_ || cdSize > length_ - cdOffset)
    return error("truncated archive: the central directory (" + std::to_string(cdSize) +
                 " bytes at offset " + std::to_string(cdOffset) + ") lies outside the " +
                 std::to_string(length_) + "-byte file");
  if (count > cdSize / kCentralHeaderSize)
    return error("corrupt archive: " + std::to_string(count) + " entries cannot fit in a " +
                 std::to_string(cdSize) + "-byte central directory");
  std::vector<uint8_t> cd(static_cast<std::size_t>(cdSize));
  GRAFT_CHECK_OK(readAt(cdOffset, cd.data(), cd.size()));
  std::size_t pos = 0;
  entries_.reserve(static_cast<std::size_t>(count));
  for (uint64_t i = 0; i < count; ++i) {
    if (pos + kCentralHeaderSize > cd.size() || le32(&cd[pos]) != kCentralSig)
      return error("corrupt archive: central directory entry " + std::to_string(i) +
                   " is malformed");
    const uint8_t *h = &cd[pos];
    ZipEntry ent;
    ent.flags = le16(h + 8);
    ent.method = le16(h + 10);
    ent.crc32 = le32(h + 16);
    ent.compressedSize = le32(h + 20);
    ent.size = le32(h + 24);
    std::size_t nameLen = le16(h + 28), extraLen = le16(h + 30), commentLen = le16(h + 32);
    ent.localHeaderOffset = le32(h + 42);
    if (pos + kCentralHeaderSize + nameLen + extraLen + commentLen > cd.size())
      return error("corrupt archive: central directory entry " + std::to_string(i) +
                   " runs past the directory");
    ent.name.assign(reinterpret_cast<const char *>(h + kCentralHeaderSize), nameLen);
    // ZIP64 extra: the 64-bit values of the fields saturated at 0xFFFFFFFF.
    const uint8_t *x = h + kCentralHeaderSize + nameLen;
    for (std::size_t k = 0; k + 4 <= extraLen;) {
      uint16_t id = le16(x + k), len = le16(x + k + 2);
      if (k + 4 + len > extraLen)
        break;
      if (id == 0x0001) {
        const uint8_t *f = x + k + 4;
        std::size_t left = len;
        auto take = [&](uint64_t &field) {
          if (field == kU32Max && left >= 8) {
            field = le64(f);
            f += 8;
            left -= 8;
          }
        };
        take(ent.size);
        take(ent.compressedSize);
        take(ent.localHeaderOffset);
      }
      k += 4 + len;
    }
    pos += kCentralHeaderSize + nameLen + extraLen + commentLen;

    uint8_t lh[kLocalHeaderSize];
    if (ent.localHeaderOffset > length_ || kLocalHeaderSize > length_ - ent.localHeaderOffset)
      return error("truncated archive: record '" + ent.name + "' starts at offset " +
                   std::to_string(ent.localHeaderOffset) + ", past the end of the " +
                   std::to_string(length_) + "-byte file");
    GRAFT_CHECK_OK(readAt(ent.localHeaderOffset, lh, sizeof lh));
    if (le32(lh) != kLocalSig)
      return error("corrupt archive: no local header for record '" + ent.name + "' at offset " +
                   std::to_string(ent.localHeaderOffset));
    ent.dataOffset = ent.localHeaderOffset + kLocalHeaderSize + le16(lh + 26) + le16(lh + 28);
    if (ent.dataOffset > length_ || ent.compressedSize > length_ - ent.dataOffset)
      return error("truncated archive: record '" + ent.name + "' needs " +
                   std::to_string(ent.compressedSize) + " bytes at offset " +
                   std::to_string(ent.dataOffset) + " but the file has " + std::to_string(length_) +
                   " bytes");
    if (ent.method != 0 && ent.method != 8)
      return error("record '" + ent.name + "' uses compression method " +
                   std::to_string(ent.method) + "; only stored (0) and deflate (8) are supported");
    if (ent.method == 0 && ent.compressedSize != ent.size)
      return error("corrupt archive: stored record '" + ent.name + "' has compressed size " +
                   std::to_string(ent.compressedSize) + " but size " + std::to_string(ent.size));
    if (ent.flags & 0x1)
      return error("record '" + ent.name + "' is encrypted");
    entries_.push_back(std::move(ent));
  }
  byName_.reserve(entries_.size());
  for (std::size_t i = 0; i < entries_.size(); ++i)
    byName_.emplace(entries_[i].name, i); // a repeated name: the first wins
  return okStatus();
}

const ZipEntry *ZipReader::find(std::string_view name) const {
  auto it = byName_.find(name);
  return it == byName_.end() ? nullptr : &entries_[it->second];
}

Expected<std::string> ZipReader::read(const ZipEntry &entry, bool verifyCrc) const {
  std::string compressed(static_cast<std::size_t>(entry.compressedSize), '\0');
  GRAFT_CHECK_OK(readAt(entry.dataOffset, compressed.data(), compressed.size()));
  std::string out;
  if (entry.method == 0) {
    out = std::move(compressed);
  } else {
    GRAFT_CHECK_OK(checkInflatedSize(entry));
    out.resize(static_cast<std::size_t>(entry.size));
    GRAFT_CHECK_OK(inflateInto(entry, compressed, reinterpret_cast<uint8_t *>(out.data())));
  }
  if (verifyCrc)
    GRAFT_CHECK_OK(checkCrc(entry, out.data()));
  return out;
}

Status ZipReader::checkInflatedSize(const ZipEntry &entry) const {
  if (entry.size > (uint64_t(1) << 34))
    return error("record '" + entry.name + "' is too large to inflate in memory");
  // Deflate expands at most 1032:1 (a 258-byte match per 2 bits), so a
  // larger claimed size is a corrupt central directory, refused before the
  // buffer for it is allocated.
  if (entry.size / 1032 > entry.compressedSize + 1)
    return error("record '" + entry.name + "' is corrupt: " + std::to_string(entry.compressedSize) +
                 " deflated bytes cannot inflate to " + std::to_string(entry.size));
  return okStatus();
}

Status ZipReader::inflateInto(const ZipEntry &entry, std::string &compressed, uint8_t *out) const {
  z_stream zs{};
  if (inflateInit2(&zs, -MAX_WBITS) != Z_OK)
    return error("cannot initialize zlib");
  zs.next_in = reinterpret_cast<Bytef *>(compressed.data());
  zs.avail_in = static_cast<uInt>(compressed.size());
  zs.next_out = out;
  zs.avail_out = static_cast<uInt>(entry.size);
  int rc = inflate(&zs, Z_FINISH);
  uint64_t produced = zs.total_out;
  inflateEnd(&zs);
  if (rc != Z_STREAM_END || produced != entry.size)
    return error("record '" + entry.name + "' is corrupt: its deflate stream does not inflate to " +
                 std::to_string(entry.size) + " bytes");
  return okStatus();
}

Status ZipReader::checkCrc(const ZipEntry &entry, const void *data) const {
  return crcMatches(entry, crc32(data, static_cast<std::size_t>(entry.size)));
}

Status ZipReader::crcMatches(const ZipEntry &entry, uint32_t crc) const {
  if (crc != entry.crc32)
    return error("record '" + entry.name + "' is corrupt: CRC-32 " + hex32(crc) +
                 " does not match the central directory's " + hex32(entry.crc32));
  return okStatus();
}

Status ZipReader::verifyCrc(const ZipEntry &entry) const {
  if (entry.method != 0) {
    auto r = read(entry, true);
    return r ? okStatus() : Status(r.takeFailure());
  }
  std::vector<uint8_t> buf(std::min<uint64_t>(entry.size, kIoChunk) + 1);
  uint32_t c = 0;
  for (uint64_t done = 0; done < entry.size;) {
    std::size_t n = static_cast<std::size_t>(std::min<uint64_t>(entry.size - done, kIoChunk));
    GRAFT_CHECK_OK(readAt(entry.dataOffset + done, buf.data(), n));
    c = crc32(buf.data(), n, c);
    done += n;
  }
  return crcMatches(entry, c);
}

Expected<std::shared_ptr<Storage>> ZipReader::map(const ZipEntry &entry) const {
  if (entry.method == 0) {
    if (entry.dataOffset > length_ || entry.size > length_ - entry.dataOffset)
      return error("cannot map record '" + entry.name + "': " + std::to_string(entry.size) +
                   " bytes at offset " + std::to_string(entry.dataOffset) +
                   " lie outside the archive (" + std::to_string(length_) + " bytes)");
    std::lock_guard<std::mutex> lock(mapMutex_);
    if (!mapped_) {
      auto s = Storage::mapFile(path_, base_, length_);
      if (!s)
        return error("cannot map record '" + entry.name + "': " + s.diags()[0].message);
      mapped_ = std::move(*s);
    }
    return Storage::view(mapped_, entry.dataOffset, entry.size);
  }
  GRAFT_TRY(std::string bytes, read(entry, true));
  return Storage::owned(std::vector<uint8_t>(bytes.begin(), bytes.end()));
}

std::optional<uint64_t> ZipReader::fileOffset(const ZipEntry &entry) const {
  if (fd_ < 0 || entry.method != 0)
    return std::nullopt;
  return base_ + entry.dataOffset;
}

Expected<std::shared_ptr<ZipReader>> ZipReader::openNested(const ZipEntry &entry) const {
  std::string name = displayName_ + ":" + entry.name;
  if (entry.method == 0 && fd_ >= 0)
    return ZipReader::open(path_, base_ + entry.dataOffset, entry.size, std::move(name));
  std::shared_ptr<const Storage> bytes;
  if (entry.method == 0) {
    GRAFT_TRY(bytes, map(entry)); // a stored record of an archive in memory
  } else {
    // A tool that recompressed the outer archive deflated the torch.save
    // archive inside it: inflate it (CRC-checked) into memory, bounded as
    // read() bounds it, and read that.
    GRAFT_CHECK_OK(checkInflatedSize(entry));
    std::string compressed(static_cast<std::size_t>(entry.compressedSize), '\0');
    GRAFT_CHECK_OK(readAt(entry.dataOffset, compressed.data(), compressed.size()));
    auto inflated = Storage::uninitialized(static_cast<std::size_t>(entry.size));
    GRAFT_CHECK_OK(inflateInto(entry, compressed, inflated->mutableData()));
    GRAFT_CHECK_OK(checkCrc(entry, inflated->data()));
    bytes = std::move(inflated);
  }
  std::shared_ptr<ZipReader> z(new ZipReader());
  z->path_ = path_;
  z->displayName_ = std::move(name);
  z->length_ = bytes->size();
  z->mapped_ = std::move(bytes);
  GRAFT_CHECK_OK(z->parse());
  return z;
}

//===----------------------------------------------------------------------===//
// ZipWriter
//===----------------------------------------------------------------------===//

Expected<std::unique_ptr<ZipWriter>> ZipWriter::create(const std::string &path) {
  std::unique_ptr<ZipWriter> w(new ZipWriter());
  w->path_ = path;
  std::filesystem::path p(path);
  std::string dir = p.has_parent_path() ? p.parent_path().string() : std::string(".");
  std::string tmpl =
      (std::filesystem::path(dir) / ("." + p.filename().string() + ".tmpXXXXXX")).string();
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  int fd = ::mkstemp(name.data());
  if (fd < 0)
    return Diagnostic::error("cannot create a temporary file in '" + dir +
                             "': " + std::strerror(errno));
  w->fd_ = fd;
  w->tempPath_ = name.data();
  return w;
}

std::unique_ptr<ZipWriter> ZipWriter::inMemory() {
  std::unique_ptr<ZipWriter> w(new ZipWriter());
  w->inMemory_ = true;
  return w;
}

ZipWriter::~ZipWriter() {
  if (fd_ >= 0)
    ::close(fd_);
  if (!inMemory_ && !finished_ && !tempPath_.empty())
    ::unlink(tempPath_.c_str());
}

Status ZipWriter::writeAll(const char *p, std::size_t left) {
  while (left > 0) {
    ssize_t n = ::write(fd_, p, std::min<std::size_t>(left, std::size_t(1) << 30));
    if (n < 0) {
      if (errno == EINTR)
        continue;
      failed_ = true;
      return Diagnostic::error("cannot write '" + path_ + "': " + std::strerror(errno));
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return okStatus();
}

Status ZipWriter::flush() {
  if (inMemory_)
    memory_ += buffer_;
  else
    GRAFT_CHECK_OK(writeAll(buffer_.data(), buffer_.size()));
  buffer_.clear();
  return okStatus();
}

Status ZipWriter::write(const void *data, std::size_t size) {
  const char *p = static_cast<const char *>(data);
  offset_ += size;
  // Large payloads bypass the buffer.
  if (!inMemory_ && size >= kIoChunk) {
    GRAFT_CHECK_OK(flush());
    return writeAll(p, size);
  }
  buffer_.append(p, size);
  if (buffer_.size() >= kIoChunk)
    return flush();
  return okStatus();
}

Status ZipWriter::add(std::string_view name, std::string_view data) {
  return addStreamed(name, data.size(),
                     [&](const auto &sink) { return sink(data.data(), data.size()); });
}

Status ZipWriter::addStreamed(
    std::string_view name, uint64_t size,
    const std::function<Status(const std::function<Status(const void *, std::size_t)> &)>
        &produce) {
  if (finished_ || failed_)
    return Diagnostic::internal("ZipWriter::add after finish or failure");
  if (name.size() > 0xFFFF)
    return Diagnostic::error("record name too long: " + std::string(name.substr(0, 64)) + "...");
  const uint64_t cursor = offset_;
  const bool big = size >= kU32Max, farOffset = cursor >= kU32Max;
  std::string zip64;
  if (big || farOffset) {
    put16(zip64, 0x0001);
    put16(zip64, static_cast<uint16_t>((big ? 16 : 0) + (farOffset ? 8 : 0)));
    if (big) {
      put64(zip64, size);
      put64(zip64, size);
    }
    if (farOffset)
      put64(zip64, cursor);
  }
  // PyTorchStreamWriter's detail::getPadding: align the payload to 64 bytes
  // with an 'FB' extra field (4-byte header + 'Z' padding).
  uint64_t start = cursor + kLocalHeaderSize + name.size() + zip64.size() + 4;
  uint64_t padding = (kAlignment - start % kAlignment) % kAlignment;
  std::string extra = zip64;
  extra += "FB";
  put16(extra, static_cast<uint16_t>(padding));
  extra.append(static_cast<std::size_t>(padding), 'Z');

  std::string header;
  put32(header, kLocalSig);
  put16(header, 0);      // version needed (miniz writes 0 for stored)
  put16(header, 0x0808); // data descriptor + UTF-8 names
  put16(header, 0);      // stored
  put16(header, 0);      // time
  put16(header, 0);      // date
  put32(header, 0);      // crc, sizes: in the data descriptor
  put32(header, 0);
  put32(header, 0);
  put16(header, static_cast<uint16_t>(name.size()));
  put16(header, static_cast<uint16_t>(extra.size()));
  header.append(name);
  header += extra;
  GRAFT_CHECK_OK(write(header.data(), header.size()));

  uint32_t crc = 0;
  uint64_t written = 0;
  Status produced = produce([&](const void *data, std::size_t n) -> Status {
    if (written + n > size)
      return Diagnostic::internal("record '" + std::string(name) + "' produced more than its " +
                                  std::to_string(size) + " bytes");
    crc = crc32(data, n, crc);
    written += n;
    return write(data, n);
  });
  if (!produced) {
    failed_ = true;
    return produced;
  }
  if (written != size) {
    failed_ = true;
    return Diagnostic::internal("record '" + std::string(name) + "' produced " +
                                std::to_string(written) + " of its " + std::to_string(size) +
                                " bytes");
  }
  std::string descriptor;
  put32(descriptor, kDescriptorSig);
  put32(descriptor, crc);
  if (zip64.empty()) {
    put32(descriptor, static_cast<uint32_t>(size));
    put32(descriptor, static_cast<uint32_t>(size));
  } else {
    put64(descriptor, size);
    put64(descriptor, size);
  }
  GRAFT_CHECK_OK(write(descriptor.data(), descriptor.size()));
  combinedCrc_ = hashCombine(combinedCrc_, crc);
  central_.push_back({std::string(name), crc, size, cursor});
  names_.emplace_back(name);
  return okStatus();
}

Status ZipWriter::finish() {
  if (finished_ || failed_)
    return Diagnostic::internal("ZipWriter::finish called twice or after a failure");
  const uint64_t cdOffset = offset_;
  std::string cd;
  for (const CentralEntry &e : central_) {
    bool big = e.size >= kU32Max, far = e.localOffset >= kU32Max;
    std::string zip64;
    if (big || far) {
      put16(zip64, 0x0001);
      put16(zip64, static_cast<uint16_t>((big ? 16 : 0) + (far ? 8 : 0)));
      if (big) {
        put64(zip64, e.size);
        put64(zip64, e.size);
      }
      if (far)
        put64(zip64, e.localOffset);
    }
    put32(cd, kCentralSig);
    put16(cd, 0); // version made by
    put16(cd, 0); // version needed
    put16(cd, 0x0808);
    put16(cd, 0);
    put16(cd, 0);
    put16(cd, 0);
    put32(cd, e.crc);
    put32(cd, static_cast<uint32_t>(std::min(e.size, kU32Max)));
    put32(cd, static_cast<uint32_t>(std::min(e.size, kU32Max)));
    put16(cd, static_cast<uint16_t>(e.name.size()));
    put16(cd, static_cast<uint16_t>(zip64.size()));
    put16(cd, 0); // comment
    put16(cd, 0); // disk
    put16(cd, 0); // internal attributes
    put32(cd, 0); // external attributes
    put32(cd, static_cast<uint32_t>(std::min(e.localOffset, kU32Max)));
    cd += e.name;
    cd += zip64;
  }
  const uint64_t cdSize = cd.size();
  const uint64_t end64Offset = cdOffset + cdSize;
  const uint64_t n = central_.size();
  // miniz in ZIP64 mode always writes the ZIP64 end record and locator.
  put32(cd, kEnd64Sig);
  put64(cd, 44);
  put16(cd, 0x031E); // version made by (as miniz writes it)
  put16(cd, 0x002D); // version needed: 4.5
  put32(cd, 0);
  put32(cd, 0);
  put64(cd, n);
  put64(cd, n);
  put64(cd, cdSize);
  put64(cd, cdOffset);
  put32(cd, kEnd64LocatorSig);
  put32(cd, 0);
  put64(cd, end64Offset);
  put32(cd, 1);
  put32(cd, kEndSig);
  put16(cd, 0);
  put16(cd, 0);
  put16(cd, static_cast<uint16_t>(std::min<uint64_t>(n, 0xFFFF)));
  put16(cd, static_cast<uint16_t>(std::min<uint64_t>(n, 0xFFFF)));
  put32(cd, static_cast<uint32_t>(std::min(cdSize, kU32Max)));
  put32(cd, static_cast<uint32_t>(std::min(cdOffset, kU32Max)));
  put16(cd, 0);
  GRAFT_CHECK_OK(write(cd.data(), cd.size()));
  GRAFT_CHECK_OK(flush());
  if (inMemory_) {
    finished_ = true;
    return okStatus();
  }
  if (::fsync(fd_) != 0) {
    failed_ = true;
    return Diagnostic::error("cannot sync '" + tempPath_ + "': " + std::strerror(errno));
  }
  ::close(fd_);
  fd_ = -1;
  // mkstemp creates 0600 files; give the archive the usual permissions.
  mode_t mask = ::umask(0);
  ::umask(mask);
  ::chmod(tempPath_.c_str(), 0666 & ~mask);
  if (::rename(tempPath_.c_str(), path_.c_str()) != 0) {
    failed_ = true;
    return Diagnostic::error("cannot rename '" + tempPath_ + "' to '" + path_ +
                             "': " + std::strerror(errno));
  }
  finished_ = true;
  return okStatus();
}

} // namespace graft
