//===- file_io.cpp - publishing files atomically ---------------------------===//
#include "file_io.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sstream>
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
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) {
    error = path + ": read error";
    return false;
  }
  out = buffer.str();
  return true;
}

} // namespace dsf::rt
