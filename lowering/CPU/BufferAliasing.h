//===- BufferAliasing.h - which buffers may share elements ---*- C++ -*-===//
//
// After one-shot bufferization, before the deallocations are placed: where
// a buffer comes from (an allocation, a function's argument, a view of
// either) and whether two buffers provably share no element, as the passes
// that rewrite bufferization's copies decide it (dsf-fold-round-trip-copies,
// dsf-fold-output-copies). Anything not proven apart is taken to alias.
//
//===----------------------------------------------------------------------===//
#ifndef DSF_LOWERING_CPU_BUFFERALIASING_H
#define DSF_LOWERING_CPU_BUFFERALIASING_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"

#include <optional>

namespace mlir::dsf {
/// The buffer a view was taken of, through view-like ops (subview,
/// expand_shape, collapse_shape, cast, ...).
Value rootOf(Value v);
/// A table no op writes (a constant memref.global): reading it never sees
/// a buffer updated in place.
bool isConstantTable(Value root);
/// Whether `other` provably shares no element with `target`: two
/// allocations (or a call's that returns one of its own), an allocation and
/// a function's argument, two strided views of one dense buffer that
/// interleave (offsets differing in one dimension by less than its
/// stride).
bool apart(Value other, Value target);
/// The same elements: one value, or two views taken alike of one buffer
/// (bufferization takes a fresh subview for each insert_slice).
bool sameView(Value a, Value b);
/// The buffers the body of `op` (a linalg op on buffers) loads from, or
/// nullopt when an op in it has another memory effect. A loop's or a
/// branch's effects are its body's: their ops are looked at one by one.
std::optional<SmallVector<Value>> bodyLoads(Operation *op);
} // namespace mlir::dsf

#endif // DSF_LOWERING_CPU_BUFFERALIASING_H
