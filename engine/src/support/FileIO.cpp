//===- FileIO.cpp - File reading and atomic writing -----------------------===//
#include "graft/support/FileIO.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace graft {

Expected<std::string> readFile(const std::string &path) {
  // An ifstream opens a directory and reads nothing: say what it is instead
  // of handing back an empty "file".
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return Diagnostic::error("'" + path + "' is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Diagnostic::error("cannot open '" + path + "': " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad())
    return Diagnostic::error("cannot read '" + path + "'");
  return ss.str();
}

Status writeFileAtomic(const std::string &path, std::string_view contents) {
  std::string tmp = path + ".tmp.XXXXXX";
  int fd = mkstemp(tmp.data());
  if (fd < 0)
    return Diagnostic::error("cannot create temporary file next to '" + path +
                             "': " + std::strerror(errno));
  const char *p = contents.data();
  std::size_t left = contents.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return Diagnostic::error("cannot write '" + path + "': " + why);
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return Diagnostic::error("cannot write '" + path + "': " + why);
  }
  // mkstemp creates 0600; give the file the usual permissions.
  ::chmod(tmp.c_str(), 0644);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return Diagnostic::error("cannot write '" + path + "': " + why);
  }
  return okStatus();
}

} // namespace graft
