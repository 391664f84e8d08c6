//===- Zip.h - ZIP archives as PyTorch reads and writes them ---*- C++ -*-===//
//
// The container of every .pt2 file (and of every torch.save payload nested in
// one) is a ZIP archive. graft reads:
//   - PyTorchStreamWriter archives (torch >= 2.8 .pt2, torch.save): stored
//     entries, ZIP64 end records, data descriptors (sizes and CRCs are zero in
//     local headers, so they come from the central directory), payloads
//     64-byte aligned through an 'FB' padding extra field;
//   - Python zipfile archives (the <= 2.7 .pt2): stored or deflated, no
//     alignment.
// An archive may be a window of a larger file (a torch.save zip stored inside
// a .pt2 record), so nested payloads can still be memory-mapped in place.
//
// ZipWriter writes exactly what PyTorchStreamWriter (miniz with
// MZ_ZIP_FLAG_WRITE_ZIP64) writes: stored entries with flags 0x0808, zeroed
// local sizes followed by a data descriptor, 64-byte aligned payloads, ZIP64
// extra fields where a size or offset needs them, and ZIP64 end records. It
// writes to a temporary file in the target directory and renames it over the
// target on finish(), so a failed write leaves nothing behind.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "graft/ir/Storage.h"
#include "graft/support/Expected.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace graft {

/// CRC-32 (ISO-HDLC, as in ZIP) of `size` bytes, continuing from `crc`.
uint32_t crc32(const void *data, std::size_t size, uint32_t crc = 0);

struct ZipEntry {
  std::string name;
  uint16_t method = 0; ///< 0 stored, 8 deflated
  uint16_t flags = 0;
  uint32_t crc32 = 0;
  uint64_t compressedSize = 0;
  uint64_t size = 0;              ///< uncompressed
  uint64_t localHeaderOffset = 0; ///< relative to the archive start
  uint64_t dataOffset = 0;        ///< payload, relative to the archive start
};

/// A read-only ZIP archive: the whole file, or `length` bytes at `base` of it.
class ZipReader {
public:
  /// Parses the end records and the central directory and checks every local
  /// header. Errors name `displayName` (default: the path) and say what is
  /// wrong (truncated, not a zip, entry outside the file, ...).
  static Expected<std::shared_ptr<ZipReader>> open(const std::string &path);
  static Expected<std::shared_ptr<ZipReader>> open(const std::string &path, uint64_t base,
                                                   uint64_t length, std::string displayName);

  ~ZipReader();
  ZipReader(const ZipReader &) = delete;
  ZipReader &operator=(const ZipReader &) = delete;

  const std::string &path() const { return path_; }
  const std::string &displayName() const { return displayName_; }
  /// Absolute file offset of the archive start.
  uint64_t base() const { return base_; }
  uint64_t length() const { return length_; }

  /// Entries in central-directory order.
  const std::vector<ZipEntry> &entries() const { return entries_; }
  const ZipEntry *find(std::string_view name) const;

  /// The uncompressed bytes of an entry, CRC-checked unless `verifyCrc` is
  /// false. The error names the record.
  Expected<std::string> read(const ZipEntry &entry, bool verifyCrc = true) const;
  /// The entry's bytes as a Storage: memory-mapped in place when stored
  /// (zero copy; a view of one mapping of the whole archive, made on first
  /// use), inflated into owned memory when deflated.
  Expected<std::shared_ptr<Storage>> map(const ZipEntry &entry) const;
  /// Streams a stored entry through CRC-32 and compares with the directory.
  Status verifyCrc(const ZipEntry &entry) const;
  /// Compares the CRC-32 of `data`, the entry's `entry.size` uncompressed
  /// bytes (e.g. its map()), with the directory's: the error read() gives.
  Status checkCrc(const ZipEntry &entry, const void *data) const;
  /// The archive in `entry` (a torch.save zip nested in a .pt2 record): a
  /// window of this file when the record is stored, so its payloads map in
  /// place; inflated into memory (CRC-checked, under read()'s bounds) when
  /// deflated, its payloads then views of that memory.
  Expected<std::shared_ptr<ZipReader>> openNested(const ZipEntry &entry) const;
  /// Where the entry's payload lies in the file, for a stored entry of an
  /// archive read from the file; nullopt for a deflated entry or an archive
  /// held in memory.
  std::optional<uint64_t> fileOffset(const ZipEntry &entry) const;

private:
  ZipReader() = default;
  Status parse();
  Status readAt(uint64_t offset, void *dst, std::size_t size) const;
  /// Whether `crc` is the directory's CRC-32 of the entry (else the error).
  Status crcMatches(const ZipEntry &entry, uint32_t crc) const;
  /// Refuses a deflated entry whose claimed size is past the limits.
  Status checkInflatedSize(const ZipEntry &entry) const;
  /// Inflates the entry's deflated bytes into `out` (entry.size bytes).
  Status inflateInto(const ZipEntry &entry, std::string &compressed, uint8_t *out) const;
  Diagnostic error(const std::string &what) const;

  std::string path_;
  std::string displayName_;
  int fd_ = -1;
  uint64_t base_ = 0;
  uint64_t length_ = 0;
  std::vector<ZipEntry> entries_;
  /// Entry name -> its first index in entries_ (names view entries_, which
  /// does not change after parse()): a weight-heavy archive has thousands.
  std::unordered_map<std::string_view, std::size_t> byName_;
  /// The whole archive, mapped once by the first map() of a stored entry;
  /// for an archive in memory (fd_ < 0), its bytes from the start.
  mutable std::shared_ptr<const Storage> mapped_;
  mutable std::mutex mapMutex_;
};

/// Writes a PyTorchStreamWriter-style archive (see the file comment).
class ZipWriter {
public:
  /// Opens a temporary file next to `path`.
  static Expected<std::unique_ptr<ZipWriter>> create(const std::string &path);
  /// An in-memory archive (for torch.save payloads nested in a record).
  static std::unique_ptr<ZipWriter> inMemory();
  ~ZipWriter(); ///< removes the temporary file unless finish() succeeded

  /// Adds a stored record named `name` (full name, including any root folder).
  Status add(std::string_view name, std::string_view data);
  /// Adds a record of `size` bytes produced by `produce`, which is called with
  /// a sink taking consecutive chunks (for data too large to hold at once).
  Status
  addStreamed(std::string_view name, uint64_t size,
              const std::function<Status(const std::function<Status(const void *, std::size_t)> &)>
                  &produce);
  /// Names of the records written so far, in order.
  const std::vector<std::string> &names() const { return names_; }
  /// Sum of CRC-32s the way PyTorchStreamWriter combines them (for the
  /// serialization id).
  uint64_t combinedCrc() const { return combinedCrc_; }

  /// Writes the central directory and end records; for file archives, fsyncs
  /// and renames the temporary file over the target.
  Status finish();
  /// The archive bytes of an in-memory writer (after finish()).
  const std::string &buffer() const { return memory_; }

private:
  ZipWriter() = default;
  Status write(const void *data, std::size_t size);
  Status flush();
  Status writeAll(const char *data, std::size_t size);

  struct CentralEntry {
    std::string name;
    uint32_t crc = 0;
    uint64_t size = 0;
    uint64_t localOffset = 0;
  };

  std::string path_;
  std::string tempPath_;
  int fd_ = -1;
  bool inMemory_ = false;
  bool finished_ = false;
  bool failed_ = false;
  std::string memory_;
  std::string buffer_;
  uint64_t offset_ = 0;
  uint64_t combinedCrc_ = 0;
  std::vector<CentralEntry> central_;
  std::vector<std::string> names_;
};

/// c10::hash_combine, which PyTorchStreamWriter uses to build serialization ids.
uint64_t hashCombine(uint64_t seed, uint64_t value);

} // namespace graft
