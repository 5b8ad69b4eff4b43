//===- file_io.h - publishing files atomically -----------------------------===//
#ifndef DSF_RUNTIME_FILE_IO_H
#define DSF_RUNTIME_FILE_IO_H

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace dsf::rt {

/// Writes the chunks in order to a temporary file beside `path`, fsyncs it
/// and renames it over `path`, so that readers see the old file or the whole
/// new one and a failed write leaves nothing behind.
bool writeFileAtomically(const std::string &path, const std::vector<std::pair<const void *, size_t>> &chunks,
                         std::string &error);

/// The whole file; false (with `error` naming it) when unreadable.
bool readWholeFile(const std::string &path, std::string &out, std::string &error);
/// The whole file appended to `out` (read straight into it); on failure
/// `out` is as it was.
bool appendWholeFile(const std::string &path, std::string &out, std::string &error);

} // namespace dsf::rt

#endif // DSF_RUNTIME_FILE_IO_H
