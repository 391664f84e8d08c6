//===- Storage.cpp - Owned and memory-mapped bytes ------------------------===//
#include "graft/ir/Storage.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace graft {

std::shared_ptr<Storage> Storage::owned(std::vector<uint8_t> bytes) {
  std::shared_ptr<Storage> s(new Storage());
  s->owned_ = std::move(bytes);
  s->data_ = s->owned_.data();
  s->size_ = s->owned_.size();
  return s;
}

std::shared_ptr<Storage> Storage::zeros(std::size_t size) {
  return owned(std::vector<uint8_t>(size, 0));
}

std::shared_ptr<Storage> Storage::uninitialized(std::size_t size) {
  std::shared_ptr<Storage> s(new Storage());
  if (size) {
    s->uninitialized_.reset(new uint8_t[size]); // default-initialized: not zeroed
    s->data_ = s->uninitialized_.get();
  } else {
    s->data_ = s->owned_.data();
  }
  s->size_ = size;
  return s;
}

Expected<std::shared_ptr<Storage>> Storage::mapFile(const std::string &path, uint64_t offset,
                                                    uint64_t length) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Diagnostic::error("cannot open '" + path + "': " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    std::string why = std::strerror(errno);
    ::close(fd);
    return Diagnostic::error("cannot stat '" + path + "': " + why);
  }
  uint64_t fileSize = static_cast<uint64_t>(st.st_size);
  if (offset > fileSize || length > fileSize - offset) {
    ::close(fd);
    return Diagnostic::error("'" + path + "' has " + std::to_string(fileSize) +
                             " bytes; cannot map " + std::to_string(length) + " bytes at offset " +
                             std::to_string(offset));
  }
  std::shared_ptr<Storage> s(new Storage());
  s->path_ = path;
  s->size_ = length;
  if (length == 0) {
    ::close(fd);
    s->data_ = s->owned_.data();
    return s;
  }
  long page = ::sysconf(_SC_PAGESIZE);
  uint64_t alignedOffset = offset - offset % static_cast<uint64_t>(page);
  std::size_t mapLength = static_cast<std::size_t>(length + (offset - alignedOffset));
  void *base =
      ::mmap(nullptr, mapLength, PROT_READ, MAP_PRIVATE, fd, static_cast<off_t>(alignedOffset));
  ::close(fd);
  if (base == MAP_FAILED)
    return Diagnostic::error("cannot map '" + path + "': " + std::strerror(errno));
  s->mapBase_ = base;
  s->mapLength_ = mapLength;
  s->data_ = static_cast<const uint8_t *>(base) + (offset - alignedOffset);
  return s;
}

std::shared_ptr<Storage> Storage::view(std::shared_ptr<const Storage> whole, uint64_t offset,
                                       uint64_t length) {
  std::shared_ptr<Storage> s(new Storage());
  s->data_ = whole->data() + offset;
  s->size_ = static_cast<std::size_t>(length);
  s->path_ = whole->path();
  s->whole_ = std::move(whole);
  return s;
}

Storage::~Storage() {
  if (mapBase_)
    ::munmap(mapBase_, mapLength_);
}

void Storage::releasePages() const {
  // The mapping is private and read-only: its pages are clean copies of the
  // file, so dropping them loses nothing.
  if (mapBase_) {
    ::madvise(mapBase_, mapLength_, MADV_DONTNEED);
  } else if (whole_ && whole_->isMapped() && size_) {
    // The pages this view touches, whole: a page shared with a neighbouring
    // view is clean, so dropping it only means faulting it in again.
    auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    auto begin = reinterpret_cast<uintptr_t>(data_) / page * page;
    auto end = (reinterpret_cast<uintptr_t>(data_) + size_ + page - 1) / page * page;
    ::madvise(reinterpret_cast<void *>(begin), end - begin, MADV_DONTNEED);
  }
}

uint8_t *Storage::mutableData() {
  // Mapped storages are read-only by construction; writing to one is a bug.
  if (mapBase_ || whole_)
    return nullptr;
  return uninitialized_ ? uninitialized_.get() : owned_.data();
}

} // namespace graft
