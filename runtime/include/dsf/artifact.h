//===- artifact.h - the compiled-model artifact (.dsfa) --------------------===//
//
// The one contract between dsf-compile and the runtime. A file holds:
//
//   offset 0   magic "DSFA\r\n\x1a\n" (8 bytes; the \r\n and \x1a catch text-mode
//              and truncating transfers, as PNG's magic does)
//   offset 8   u32 format version (kArtifactVersion)
//   offset 12  u32 section count
//   offset 16  section table: per section u32 kind, u32 reserved (0),
//              u64 offset, u64 size, u64 FNV-1a-64 checksum of its bytes
//   then       u64 FNV-1a-64 of everything before it (the header's checksum)
//   then       the sections' bytes, at the offsets the table gives
//
// All integers are little-endian. Sections: the manifest (JSON: the model,
// the entry points with their inputs, outputs and weight bindings, the cache
// plan) and the host kernels (an ELF shared object exporting one
// `void dsf_entry_<name>(void **args)` per entry point; PTX joins it when the
// GPU backend lands). Reading validates everything before anything is used:
// magic, version, table bounds, checksums, the manifest's schema.
//
//===----------------------------------------------------------------------===//
#ifndef DSF_RUNTIME_ARTIFACT_H
#define DSF_RUNTIME_ARTIFACT_H

#include "dsf/codecs.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dsf::rt {

inline constexpr char kArtifactMagic[8] = {'D', 'S', 'F', 'A', '\r', '\n', '\x1a', '\n'};
// 2: entry points take and return their sequence's state ("state:NAME").
inline constexpr uint32_t kArtifactVersion = 2;

/// The global a CUDA kernel module defines when every kernel in it begins by
/// waiting for the grids before it (griddepcontrol.wait; the compiler's
/// dsf-gpu-grid-dependency-control): the runtime may then launch those
/// kernels with programmatic stream serialization, their launch overlapping
/// the end of the kernel before them. A module without it is launched plainly.
inline constexpr char kGridDependencyMarker[] = "dsf_grid_dependency_control";

enum class SectionKind : uint32_t { Manifest = 1, HostKernels = 2 };

uint64_t fnv1a64(const void *data, size_t size);

/// A tensor an entry point takes or returns: dtype "f32", "i32" or "i1";
/// -1 in the shape for the dynamic token axis.
struct TensorSpec {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
};

/// A weight an entry point binds, in argument order. With `expertNames`
/// (a pattern with "{e}"), the weight is the stack over its first axis of
/// the checkpoint's per-expert tensors of those names.
struct WeightSpec {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::string expertNames;
};

/// Arguments of `dsf_entry_<name>`: args[0] points at the results' memref
/// descriptors (one after the other: the logits, then each state output),
/// then one descriptor per input, then one per weight. Inputs are the token
/// inputs ("token_ids", "positions", "image_mask") and, for an entry point
/// that continues a sequence, its state ("state:NAME", f32 rows); outputs
/// are "logits" and the state after the call, which a later call takes by
/// name: windows keep their last size - 1 rows, caches all their entries,
/// compressors their carried input rows.
struct EntryPoint {
  std::string name;
  std::string symbol;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  std::vector<WeightSpec> weights;
};

/// Where a layer-shared cache or window lives (the tier plan of dsf-plan-cache).
struct CachePlanEntry {
  std::string what;     // "kv", "index_keys" or "window"
  int64_t ratio = 0;    // 0 for windows
  int64_t width = 0;
  std::string format;   // e.g. "e2m1/e4m3/16", "f32"
  std::string live, idle;
  int64_t ttlSeconds = 0;
  int64_t layers = 0;   // how many layers hold one
};

/// One piece of a sequence's state ("state:NAME" in the entry points): a
/// window (its retained rows), a global cache ("kv", "index_keys": all its
/// entries) or a compressor's carried input rows ("carry"). `element`,
/// `scale`, `block` and `bf16Tail` give the format its values are exact in
/// ("f32" element: plain), which is how the cache tiers store them.
struct StateSlot {
  std::string name;
  std::string kind;   // window, kv, index_keys, carry
  int64_t ratio = 0;  // caches: tokens per entry; carries: their compressor's
  int64_t width = 0;
  int64_t windowSize = 0;  // windows: W (they keep W - 1 rows)
  std::string element = "f32", scale = "none";
  int64_t block = 0, bf16Tail = 0;
};

/// The row format a slot's values are exact in, if the codecs have it (FP8,
/// MXFP4, NVFP4 of the slot's width, no bf16 tail): how the tiers store its
/// rows, and how a batch's packed pages (u8 slots) hold them.
bool rowFormatOf(const StateSlot &slot, RowFormat &f);

struct Manifest {
  std::string model;
  std::string family;
  std::string target;       // "cpu-x86_64"
  int64_t vocabSize = 0;
  int64_t maxPositions = 0;
  std::string prefillMode;  // full, exact-tail, bounded-replay
  bool kvQuant = true;
  std::vector<EntryPoint> entryPoints;
  std::vector<CachePlanEntry> cachePlan;
  std::vector<StateSlot> state;

  const EntryPoint *entry(const std::string &name) const;
  const StateSlot *slot(const std::string &name) const;
};

std::string manifestToJson(const Manifest &manifest);
/// Parses and checks the schema; on failure returns false and sets `error`
/// naming the field at fault.
bool manifestFromJson(const std::string &json, Manifest &out, std::string &error);

struct Section {
  SectionKind kind;
  std::string bytes;
};

/// Writes an artifact atomically (temporary file, fsync, rename).
bool writeArtifact(const std::string &path, const std::vector<Section> &sections, std::string &error);

/// A read, validated artifact.
class Artifact {
public:
  static std::unique_ptr<Artifact> open(const std::string &path, std::string &error);
  const Manifest &manifest() const { return manifest_; }
  /// Null when the artifact has no such section.
  const std::string *section(SectionKind kind) const;
  const std::string &path() const { return path_; }

private:
  std::string path_;
  Manifest manifest_;
  std::map<SectionKind, std::string> sections_;
};

} // namespace dsf::rt

#endif // DSF_RUNTIME_ARTIFACT_H
