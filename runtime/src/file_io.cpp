//===- file_io.cpp - publishing files atomically ---------------------------===//
#include "file_io.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dsf::rt {

bool writeFileAtomically(const std::string &path, const std::vector<std::pair<const void *, size_t>> &chunks,
                         std::string &error) {
  std::string temp = path + ".tmp." + std::to_string(getpid());
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    error = path + ": cannot write: " + std::strerror(errno);
    return false;
  }
  auto writeAll = [&](const void *p, size_t n) {
    auto *c = static_cast<const char *>(p);
    while (n) {
      ssize_t w = ::write(fd, c, n);
      if (w < 0) {
        if (errno == EINTR)
          continue;
        return false;
      }
      c += w;
      n -= size_t(w);
    }
    return true;
  };
  bool ok = true;
  for (const auto &[data, size] : chunks)
    ok = ok && writeAll(data, size);
  ok = ok && fsync(fd) == 0;
  int savedErrno = errno;
  ok = (::close(fd) == 0) && ok;
  if (!ok || std::rename(temp.c_str(), path.c_str()) != 0) {
    error = path + ": cannot write: " + std::strerror(ok ? errno : savedErrno);
    ::unlink(temp.c_str());
    return false;
  }
  return true;
}

bool readWholeFile(const std::string &path, std::string &out, std::string &error) {
  out.clear();
  return appendWholeFile(path, out, error);
}

bool appendWholeFile(const std::string &path, std::string &out, std::string &error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  const size_t base = out.size();
  bool ok = true;
  struct stat st;
  size_t size = ::fstat(fd, &st) == 0 && st.st_size > 0 ? size_t(st.st_size) : 0;
  // The size fstat gives first, then whatever the file still holds past it.
  for (size_t want = std::max<size_t>(size, 1); ok;) {
    size_t at = out.size();
    out.resize(at + want);
    ssize_t got = ::read(fd, &out[at], want);
    if (got < 0 && errno == EINTR) {
      out.resize(at);
      continue;
    }
    ok = got >= 0;
    out.resize(at + (got > 0 ? size_t(got) : 0));
    if (got <= 0)
      break;
    want = size_t(got) < want ? want - size_t(got) : 65536;
  }
  ::close(fd);
  if (!ok) {
    error = path + ": read error: " + std::strerror(errno);
    out.resize(base);
  }
  return ok;
}

} // namespace dsf::rt
