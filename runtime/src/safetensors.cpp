//===- safetensors.cpp - reading and writing safetensors files -------------===//
#include "dsf/safetensors.h"
#include "file_io.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dsf::rt {
namespace {
struct DTypeInfo { const char *name; DType dtype; size_t bytes; };
constexpr DTypeInfo kDTypes[] = {
    {"F64", DType::F64, 8},         {"F32", DType::F32, 4},   {"F16", DType::F16, 2},
    {"BF16", DType::BF16, 2},       {"F8_E4M3", DType::F8_E4M3, 1},
    {"F8_E8M0", DType::F8_E8M0, 1}, {"I64", DType::I64, 8},   {"I32", DType::I32, 4},
    {"I16", DType::I16, 2},         {"I8", DType::I8, 1},     {"U8", DType::U8, 1},
    {"BOOL", DType::BOOL, 1}};

// Header sizes beyond this are not a real safetensors header.
constexpr uint64_t kMaxHeader = 100u << 20;

} // namespace

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + (shape[i] < 0 ? std::string("?") : std::to_string(shape[i]));   // < 0: dynamic
  return s + "]";
}
bool parseDType(const std::string &name, DType &out) {
  for (const auto &d : kDTypes)
    if (name == d.name) {
      out = d.dtype;
      return true;
    }
  return false;
}

const char *dtypeName(DType dtype) {
  for (const auto &d : kDTypes)
    if (d.dtype == dtype)
      return d.name;
  return "?";
}

size_t dtypeBytes(DType dtype) {
  for (const auto &d : kDTypes)
    if (d.dtype == dtype)
      return d.bytes;
  return 0;
}

int64_t TensorView::elements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::unique_ptr<SafetensorsFile> SafetensorsFile::open(const std::string &path, std::string &error) {
  auto fail = [&](const std::string &what) {
    error = path + ": " + what;
    return nullptr;
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return fail(std::string("cannot open: ") + std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return fail("not a regular file");
  }
  size_t size = st.st_size;
  if (size < 8) {
    ::close(fd);
    return fail("truncated: " + std::to_string(size) + " bytes, shorter than the 8-byte header length");
  }
  void *map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED)
    return fail(std::string("cannot map: ") + std::strerror(errno));
  std::unique_ptr<SafetensorsFile> file(new SafetensorsFile());
  file->path_ = path;
  file->mapping_ = map;
  file->size_ = size;
  auto *bytes = static_cast<const uint8_t *>(map);

  uint64_t headerLength = 0;
  std::memcpy(&headerLength, bytes, 8); // little-endian hosts only (x86-64, arm64)
  if (headerLength > kMaxHeader || headerLength > size - 8)
    return fail("header length " + std::to_string(headerLength) + " exceeds the file (" +
                std::to_string(size) + " bytes): truncated or not safetensors");
  nlohmann::json header = nlohmann::json::parse(bytes + 8, bytes + 8 + headerLength, nullptr,
                                                /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object())
    return fail("the header is not a JSON object: not a safetensors file");
  const uint8_t *data = bytes + 8 + headerLength;
  size_t dataSize = size - 8 - headerLength;
  std::vector<std::pair<size_t, size_t>> ranges;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string &name = it.key();
    const nlohmann::json &entry = it.value();
    if (name == "__metadata__") {
      if (!entry.is_object())
        return fail("__metadata__ is not an object");
      for (auto m = entry.begin(); m != entry.end(); ++m) {
        if (!m.value().is_string())
          return fail("__metadata__." + m.key() + " is not a string");
        file->metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    auto bad = [&](const std::string &what) { return fail("tensor '" + name + "': " + what); };
    if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") ||
        !entry.contains("data_offsets"))
      return bad("needs dtype, shape and data_offsets");
    TensorView t;
    t.name = name;
    if (!entry["dtype"].is_string() || !parseDType(entry["dtype"].get<std::string>(), t.dtype))
      return bad("unknown dtype " + entry["dtype"].dump());
    if (!entry["shape"].is_array())
      return bad("shape is not a list");
    for (const auto &d : entry["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0)
        return bad("shape " + entry["shape"].dump() + " has a non-integer or negative size");
      t.shape.push_back(d.get<int64_t>());
    }
    const auto &offsets = entry["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned())
      return bad("data_offsets must be [begin, end]");
    size_t begin = offsets[0].get<size_t>(), end = offsets[1].get<size_t>();
    if (begin > end || end > dataSize)
      return bad("data [" + std::to_string(begin) + ", " + std::to_string(end) +
                 ") lies outside the " + std::to_string(dataSize) + " data bytes (truncated file?)");
    size_t expected = size_t(t.elements()) * dtypeBytes(t.dtype);
    if (end - begin != expected)
      return bad("holds " + std::to_string(end - begin) + " bytes but " + dtypeName(t.dtype) + " " +
                 shapeString(t.shape) + " needs " + std::to_string(expected));
    t.data = data + begin;
    t.bytes = end - begin;
    ranges.push_back({begin, end});
    file->tensors_.push_back(std::move(t));
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second)
      return fail("two tensors overlap in the data section");
  return file;
}

SafetensorsFile::~SafetensorsFile() {
  if (mapping_)
    munmap(mapping_, size_);
}

const TensorView *SafetensorsFile::find(const std::string &name) const {
  for (const TensorView &t : tensors_)
    if (t.name == name)
      return &t;
  return nullptr;
}

bool writeSafetensors(const std::string &path, const std::vector<OwnedTensor> &tensors,
                      const std::map<std::string, std::string> &metadata, std::string &error) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty())
    header["__metadata__"] = metadata;
  size_t offset = 0;
  for (const OwnedTensor &t : tensors) {
    header[t.name] = {{"dtype", dtypeName(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.data.size()}}};
    offset += t.data.size();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  uint64_t length = text.size();
  std::vector<std::pair<const void *, size_t>> chunks{{&length, 8}, {text.data(), text.size()}};
  for (const OwnedTensor &t : tensors)
    chunks.push_back({t.data.data(), t.data.size()});
  return writeFileAtomically(path, chunks, error);
}

bool readAsFloat(const TensorView &t, std::vector<float> &out, std::string &error) {
  size_t n = size_t(t.elements());
  out.resize(n);
  switch (t.dtype) {
  case DType::F32:
    std::memcpy(out.data(), t.data, n * 4);
    return true;
  case DType::F64:
    for (size_t i = 0; i < n; ++i) {
      double d;
      std::memcpy(&d, t.data + 8 * i, 8);
      out[i] = float(d);
    }
    return true;
  case DType::BF16:
    for (size_t i = 0; i < n; ++i) {
      uint32_t bits = uint32_t(t.data[2 * i]) | uint32_t(t.data[2 * i + 1]) << 8;
      bits <<= 16;
      std::memcpy(&out[i], &bits, 4);
    }
    return true;
  case DType::F16:
    for (size_t i = 0; i < n; ++i) {
      uint16_t h = uint16_t(t.data[2 * i]) | uint16_t(t.data[2 * i + 1]) << 8;
      uint32_t sign = uint32_t(h >> 15) << 31, exp = (h >> 10) & 0x1F, mant = h & 0x3FF, bits;
      if (exp == 0x1F)
        bits = sign | 0x7F800000u | (mant << 13);
      else if (exp)
        bits = sign | ((exp + 112) << 23) | (mant << 13);
      else if (!mant)
        bits = sign;
      else { // subnormal: normalise
        int e = -1;
        do {
          ++e;
          mant <<= 1;
        } while (!(mant & 0x400));
        bits = sign | ((112 - e) << 23) | ((mant & 0x3FF) << 13);
      }
      std::memcpy(&out[i], &bits, 4);
    }
    return true;
  default:
    error = "tensor '" + t.name + "' is " + dtypeName(t.dtype) + ", not a floating-point type";
    return false;
  }
}

} // namespace dsf::rt
