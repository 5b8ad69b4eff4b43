//===- safetensors.h - reading and writing safetensors files ---------------===//
//
// The runtime's view of weights and test data: a memory-mapped, validated
// reader (tensors are views into the mapping, nothing is copied) and a writer
// that publishes a file atomically (temporary file, fsync, rename), so a
// failed or interrupted write leaves nothing behind.
//
//===----------------------------------------------------------------------===//
#ifndef DSF_RUNTIME_SAFETENSORS_H
#define DSF_RUNTIME_SAFETENSORS_H

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dsf::rt {

enum class DType { F64, F32, F16, BF16, F8_E4M3, F8_E8M0, I64, I32, I16, I8, U8, BOOL };

/// "F32", "BF16", ... as safetensors spells them; false when unknown.
bool parseDType(const std::string &name, DType &out);
const char *dtypeName(DType dtype);
size_t dtypeBytes(DType dtype);
/// "[a, b, c]", as messages print shapes.
/// "[2, 3]"; a dynamic (negative) extent prints as "?".
std::string shapeString(const std::vector<int64_t> &shape);

struct TensorView {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  const uint8_t *data = nullptr;
  size_t bytes = 0;
  int64_t elements() const;
};

class SafetensorsFile {
public:
  /// Maps and validates `path`; on failure returns null and sets `error` to a
  /// message naming the file and what is wrong.
  static std::unique_ptr<SafetensorsFile> open(const std::string &path, std::string &error);
  ~SafetensorsFile();

  const std::vector<TensorView> &tensors() const { return tensors_; }
  const TensorView *find(const std::string &name) const;
  const std::map<std::string, std::string> &metadata() const { return metadata_; }
  const std::string &path() const { return path_; }

private:
  SafetensorsFile() = default;
  std::string path_;
  void *mapping_ = nullptr;
  size_t size_ = 0;
  std::vector<TensorView> tensors_;
  std::map<std::string, std::string> metadata_;
};

/// A tensor to write: its bytes are owned.
struct OwnedTensor {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
};

/// Writes `tensors` (in order) and `metadata` to `path` atomically.
bool writeSafetensors(const std::string &path, const std::vector<OwnedTensor> &tensors,
                      const std::map<std::string, std::string> &metadata, std::string &error);

/// A float view of any floating tensor (F64, F32, F16, BF16) in f32.
bool readAsFloat(const TensorView &t, std::vector<float> &out, std::string &error);

} // namespace dsf::rt

#endif // DSF_RUNTIME_SAFETENSORS_H
