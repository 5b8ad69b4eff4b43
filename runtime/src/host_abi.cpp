//===- host_abi.cpp - what host kernels call back into ---------------------===//
//
// MLIR's lowering of memref.copy between non-contiguous memrefs (the tail
// slices of a split prefill) calls `memrefCopy(elemSize, src, dst)` on
// unranked descriptors; MLIR's own definition lives in
// libmlir_c_runner_utils, which the runtime does not link. This is the same
// contract, written for the runtime: executables that load host kernels
// export it (ENABLE_EXPORTS), and HostModel references it so the linker keeps
// it.
//
//===----------------------------------------------------------------------===//
#include <cstdint>
#include <cstring>
#include <vector>

namespace {
/// An unranked memref: its rank and a pointer to the ranked descriptor
/// {allocated, aligned, offset, sizes[rank], strides[rank]}.
struct Unranked {
  int64_t rank;
  void *descriptor;
};
} // namespace

extern "C" __attribute__((visibility("default"))) void memrefCopy(int64_t elemSize, Unranked *src, Unranked *dst) {
  auto *s = static_cast<int64_t *>(src->descriptor);
  auto *d = static_cast<int64_t *>(dst->descriptor);
  int64_t rank = src->rank;
  char *srcBase = reinterpret_cast<char *>(s[1]) + s[2] * elemSize;
  char *dstBase = reinterpret_cast<char *>(d[1]) + d[2] * elemSize;
  const int64_t *sizes = s + 3, *srcStrides = s + 3 + rank, *dstStrides = d + 3 + rank;
  for (int64_t i = 0; i < rank; ++i)
    if (sizes[i] == 0)
      return;
  if (rank == 0) {
    std::memcpy(dstBase, srcBase, size_t(elemSize));
    return;
  }
  std::vector<int64_t> index(size_t(rank), 0);
  int64_t srcOffset = 0, dstOffset = 0;
  while (true) {
    std::memcpy(dstBase + dstOffset * elemSize, srcBase + srcOffset * elemSize, size_t(elemSize));
    int64_t axis = rank - 1;
    for (; axis >= 0; --axis) {
      ++index[size_t(axis)];
      srcOffset += srcStrides[axis];
      dstOffset += dstStrides[axis];
      if (index[size_t(axis)] < sizes[axis])
        break;
      srcOffset -= srcStrides[axis] * sizes[axis];
      dstOffset -= dstStrides[axis] * sizes[axis];
      index[size_t(axis)] = 0;
    }
    if (axis < 0)
      return;
  }
}
