// RUN: dsf-opt %s --dsf-gpu-tiled-matmul=min-rows=16 --split-input-file | FileCheck %s
// RUN: dsf-opt %s --dsf-gpu-tiled-matmul="min-rows=16 min-blocks=0" --split-input-file | FileCheck --check-prefix=ANY-BLOCKS %s
// RUN: dsf-opt %s --dsf-gpu-tiled-matmul="min-rows=16 batch-invariant=true" --split-input-file | FileCheck --check-prefix=INVARIANT %s
// RUN: dsf-opt %s --dsf-gpu-tiled-matmul="min-rows=16 math=tf32" --split-input-file | FileCheck --check-prefix=TF32 %s
// RUN: dsf-opt %s --dsf-gpu-tiled-matmul="min-rows=16 math=3xtf32" --split-input-file | FileCheck --check-prefix=TF32X3 %s
// RUN: dsf-opt %s --dsf-gpu-tiled-matmul="min-rows=16 math=bf16 cp-async=false" --split-input-file | FileCheck --check-prefix=BF16 %s
// RUN: dsf-opt %s --dsf-gpu-tiled-matmul="min-rows=16 math=bf16" --split-input-file | FileCheck --check-prefix=ASYNC %s
// RUN: dsf-opt %s --dsf-gpu-tiled-matmul="min-rows=16 math=bf16 bf16-copies=true" --split-input-file | FileCheck --check-prefix=COPY %s
// RUN: dsf-opt %s --dsf-gpu-tiled-matmul="min-rows=16 math=bf16 split-min-rows=0" --split-input-file | FileCheck --check-prefix=NOSPLIT %s
// RUN: dsf-opt %s --dsf-gpu-tiled-matmul="min-rows=16 math=bf16 batch-invariant=true" --split-input-file | FileCheck --check-prefix=INVARIANT-BF16 %s

// On the tensor cores (math=tf32): the same staging into slices padded to
// 72 floats a row (the fragments' reads fall in 32 banks), then per 8-deep
// step a warp's A fragment (4 values rounded to tf32) and, for each of its
// four n8 tiles, a B fragment (2 values) and one mma.sync m16n8k8 onto 4
// accumulators; the warp kernel below 16 rows is as before.
// TF32-LABEL: func.func @proj
// TF32: gpu.launch {{.*}} workgroup(%[[AS:.*]] : memref<16x72xf32, #gpu.address_space<workgroup>>, %[[WS:.*]] : memref<16x72xf32, #gpu.address_space<workgroup>>)
// TF32: gpu.barrier
// TF32-COUNT-4: nvvm.convert.float.to.tf32 {{.*}} {rnd = #nvvm.fp_rnd_mode<rna>}
// TF32-COUNT-2: nvvm.convert.float.to.tf32
// TF32: nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[{{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<tf32>, multiplicandBPtxType = #nvvm.mma_type<tf32>, shape = #nvvm.shape<m = 16, n = 8, k = 8>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// TF32-COUNT-4: llvm.extractvalue
// TF32-COUNT-7: nvvm.mma.sync
// TF32-NOT: nvvm.mma.sync
// TF32: gpu.barrier
// TF32: gpu.terminator
// TF32: gpu.shuffle xor
// 3xtf32: each operand split into a tf32 high part and the tf32 rounding of
// what it missed; three products per tile (lo*hi, hi*lo, then hi*hi).
// TF32X3-LABEL: func.func @proj
// TF32X3: %[[HI:.*]] = nvvm.convert.float.to.tf32 %[[X:[0-9]+]]
// TF32X3: %[[HIF:.*]] = arith.bitcast %[[HI]] : i32 to f32
// TF32X3: %[[REST:.*]] = arith.subf %[[X]], %[[HIF]]
// TF32X3: nvvm.convert.float.to.tf32 %[[REST]]
// TF32X3-COUNT-24: nvvm.mma.sync
// TF32X3-NOT: nvvm.mma.sync
// TF32X3: gpu.terminator

// bf16 with cp.async (the default): operands whose rows are contiguous
// (identity layouts, a depth of 128) are copied 16 bytes a copy into rings of
// three 32-deep stages in dynamic shared memory, [3][64][40] f32 each here
// (30,720 bytes: the kernel asks for 61,440); two stages are issued before
// the loop, each iteration waits for all but the newest group, syncs,
// issues the stage two ahead (zero-filled past the rows and K: cp.async's
// source size) and multiplies its slot in two k16 steps, the fragments
// read in pairs of depths (8-byte loads of f32, rounded to bf16x2).
// With bf16-copies an f32 A is rounded to a bf16 copy by a kernel
// of its own in the tiles' branch, and the tiles stage the copy, 8 bf16 a
// cp.async, into a ring of bf16 (a third less shared memory: 15,360 + 30,720
// bytes); the copy is freed after them. The warp kernel below reads A as
// stored.
// COPY-LABEL: func.func @proj
// COPY: scf.if
// COPY: %[[COPY:.*]] = memref.alloc(%{{.*}}) : memref<?x128xbf16>
// COPY: scf.parallel
// COPY: %[[X:.*]] = memref.load %arg0
// COPY: %[[B:.*]] = arith.truncf %[[X]] : f32 to bf16
// COPY: memref.store %[[B]], %[[COPY]]
// COPY: gpu.launch {{.*}} dynamic_shared_memory_size %c46080_i32 {
// COPY: memref.view {{.*}} to memref<3x64x40xbf16, #gpu.address_space<workgroup>>
// COPY: nvgpu.device_async_copy %[[COPY]][%{{.*}}, %{{.*}}], %{{.*}}, 8, %{{.*}} {bypassL1} : memref<?x128xbf16> to memref<3x64x40xbf16, #gpu.address_space<workgroup>>
// COPY: nvgpu.device_async_copy %arg1[
// COPY: gpu.terminator
// COPY: memref.dealloc %[[COPY]]
// COPY-NEXT: } else {
// COPY-NOT: memref<?x128xbf16>
// COPY: memref.load %arg0
// COPY: gpu.shuffle xor
// ASYNC-LABEL: func.func @proj
// ASYNC: gpu.launch {{.*}} dynamic_shared_memory_size %c61440_i32 {
// ASYNC: %[[SHARED:.*]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// ASYNC: %[[RA:.*]] = memref.view %[[SHARED]][%c0{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<3x64x40xf32, #gpu.address_space<workgroup>>
// ASYNC: %[[RW:.*]] = memref.view %[[SHARED]][%c30720][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<3x64x40xf32, #gpu.address_space<workgroup>>
// ASYNC: %[[N:.*]] = arith.select %{{.*}}, %c4{{.*}}, %c0{{.*}} : index
// ASYNC: nvgpu.device_async_copy %arg0[%{{.*}}, %{{.*}}], %[[RA]][%c0{{.*}}, %{{.*}}, %{{.*}}], 4, %[[N]] {bypassL1} : memref<?x128xf32> to memref<3x64x40xf32, #gpu.address_space<workgroup>>
// ASYNC: nvgpu.device_async_copy %arg1[%{{.*}}, %{{.*}}], %[[RW]][%c0{{.*}}, %{{.*}}, %{{.*}}], 4, %{{.*}} {bypassL1} : memref<96x128xf32> to memref<3x64x40xf32, #gpu.address_space<workgroup>>
// ASYNC: nvvm.cp.async.commit.group
// ASYNC: nvvm.cp.async.commit.group
// ASYNC: scf.for
// ASYNC-NEXT: nvvm.cp.async.wait.group 1
// ASYNC-NEXT: gpu.barrier
// ASYNC: nvgpu.device_async_copy
// ASYNC: nvvm.cp.async.commit.group
// ASYNC: %[[P:.*]] = vector.load %[[RW]][{{.*}}] {alignment = 8 : i64} : memref<3x64x40xf32, #gpu.address_space<workgroup>>, vector<2xf32>
// ASYNC-NEXT: %[[B:.*]] = arith.truncf %[[P]] : vector<2xf32> to vector<2xbf16>
// ASYNC-NEXT: vector.bitcast %[[B]] : vector<2xbf16> to vector<1xi32>
// ASYNC-COUNT-4: nvvm.mma.sync
// ASYNC: vector.load %[[RW]]
// ASYNC-COUNT-4: nvvm.mma.sync
// ASYNC-NOT: nvvm.mma.sync
// ASYNC: scf.yield
// ASYNC: nvvm.cp.async.wait.group 0
// ASYNC: gpu.terminator
// ASYNC-NOT: gpu.barrier
// ASYNC: gpu.shuffle xor

// bf16: the slices staged as pairs of depths, 8 rows of 72 i32 (two bf16
// each, rounded as they are stored: the lower depth in the low half); per
// slice one A fragment (4 pair words) and, for each n8 tile, two B words and
// one mma.sync m16n8k16 .bf16 onto the f32 accumulators.
// BF16-LABEL: func.func @proj
// BF16: gpu.launch {{.*}} workgroup(%[[AS:.*]] : memref<8x72xi32, #gpu.address_space<workgroup>>, %[[WS:.*]] : memref<8x72xi32, #gpu.address_space<workgroup>>)
// BF16: %[[LO:.*]] = arith.truncf %{{.*}} : f32 to bf16
// BF16: %[[LOBITS:.*]] = arith.bitcast %[[LO]] : bf16 to i16
// BF16: %[[HI:.*]] = arith.truncf %{{.*}} : f32 to bf16
// BF16: %[[SHIFTED:.*]] = arith.shli
// BF16: %[[PAIR:.*]] = arith.ori %{{.*}}, %[[SHIFTED]] : i32
// BF16: memref.store %[[PAIR]], %[[AS]][
// BF16: gpu.barrier
// BF16-COUNT-4: memref.load %[[AS]]
// BF16-COUNT-2: memref.load %[[WS]]
// BF16: nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[{{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// BF16-COUNT-3: nvvm.mma.sync
// BF16-NOT: nvvm.mma.sync
// BF16: gpu.barrier
// BF16: gpu.terminator

// Batch-invariant: below 16 rows the generic stays (one thread per output,
// the tiled kernel's order of sums).
// INVARIANT-LABEL: func.func @proj
// INVARIANT: gpu.launch
// INVARIANT: gpu.terminator
// INVARIANT-NEXT: }
// INVARIANT-NEXT: } else {
// INVARIANT-NEXT: linalg.generic
// INVARIANT-NOT: gpu.shuffle

// A projection C[t, o] += A[t, d] * W[o, d]: from 16 rows a tiled kernel
// (96 static columns: 64 x 64 tiles, 256 threads, two 16-deep shared
// slices padded to 68 floats a row), below it a warp per output (lanes 32
// apart along the reduction, then five xor shuffles); the generic is gone.
// The first slice is loaded before the loop (4 elements of A and 4 of W a
// thread, each at a position clamped into the operand and replaced by 0
// outside it); each iteration stores the slice it carries, loads the next
// (a uniform branch: none past K) and multiplies: 16 accumulators a thread,
// each depth's 4 + 4 operands two 16-byte shared loads.
// The tiles need 16 rows and, below 128 rows, 66 tiles or more (half the
// H200's SMs): fewer take the warp kernel, whose rows past the first read
// the weight from L2. Its one grid dimension has the rows fastest (block x:
// row x mod M of outputs chunk x / M), so the rows that read one chunk of W
// run together.
// CHECK-LABEL: func.func @proj
// CHECK: %[[ROWS:.*]] = memref.dim %arg0, %c0
// CHECK: %[[COLS:.*]] = memref.dim %arg1, %c0
// CHECK: %[[GRIDX:.*]] = arith.divui {{.*}}, %c64
// CHECK: %[[GRIDY:.*]] = arith.divui {{.*}}, %c64
// CHECK: %[[BIG:.*]] = arith.cmpi uge, %[[ROWS]], %c16
// CHECK: %[[TILES:.*]] = arith.muli %[[GRIDX]], %[[GRIDY]]
// CHECK: %[[WIDE:.*]] = arith.cmpi uge, %[[TILES]], %c66
// CHECK: %[[FULL:.*]] = arith.cmpi uge, %[[ROWS]], %c128
// CHECK: %[[ENOUGH:.*]] = arith.ori %[[WIDE]], %[[FULL]]
// CHECK: %[[TILED:.*]] = arith.andi %[[BIG]], %[[ENOUGH]]
// CHECK: scf.if %[[TILED]] {
// CHECK: gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c256, {{.*}}) workgroup(%[[AS:.*]] : memref<16x68xf32, #gpu.address_space<workgroup>>, %[[WS:.*]] : memref<16x68xf32, #gpu.address_space<workgroup>>)
// CHECK: %[[FIRST:.*]]:8 = scf.if %{{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK: %[[ROW:.*]] = arith.minui
// CHECK-NEXT: %[[DEPTH:.*]] = arith.minui
// CHECK-NEXT: %[[X:.*]] = memref.load %arg0[%[[ROW]], %[[DEPTH]]]
// CHECK-NEXT: arith.select %{{.*}}, %[[X]], %cst
// CHECK: scf.for {{.*}} iter_args({{.*}} = %[[FIRST]]#0, {{.*}} = %[[FIRST]]#7) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK-COUNT-4: memref.store {{.*}}, %[[AS]]
// CHECK-COUNT-4: memref.store {{.*}}, %[[WS]]
// CHECK: gpu.barrier
// CHECK: scf.if %{{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK: } else {
// CHECK: }
// CHECK: vector.load %[[AS]][%{{.*}}] {alignment = 16 : i64} : memref<16x68xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK: vector.load %[[WS]][%{{.*}}] {alignment = 16 : i64} : memref<16x68xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK-COUNT-16: arith.mulf
// CHECK: gpu.barrier
// CHECK-NEXT: scf.yield
// CHECK: memref.store {{.*}}, %arg2
// CHECK: gpu.terminator
// CHECK: } else {
// CHECK: %[[CHUNKS:.*]] = arith.divui {{.*}}, %c8
// CHECK: %[[BLOCKS:.*]] = arith.muli %[[CHUNKS]], %[[ROWS]]
// CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[BLOCKS]], %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}})
// CHECK: %[[ROW:.*]] = arith.remui %[[BX]], %[[ROWS]]
// CHECK: %[[CHUNK:.*]] = arith.divui %[[BX]], %[[ROWS]]
// CHECK: arith.muli %[[CHUNK]], %c8
// The lane's depths four an iteration, their 8 loads before the 4 products
// (added in the order of one at a time), then the rest one at a time.
// CHECK: %[[GROUPS:.*]] = scf.for %{{.*}} = %{{.*}} to %[[END:.*]] step %c128{{.*}} iter_args
// CHECK-COUNT-8: memref.load
// CHECK-COUNT-4: arith.mulf
// CHECK: scf.for %{{.*}} = %[[END]] to %{{.*}} step %c32{{.*}} iter_args(%{{.*}} = %[[GROUPS]])
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK: memref.store {{.*}}, %arg2
// CHECK: gpu.terminator
// CHECK-NOT: linalg.generic
// CHECK-LABEL: func.func @other
// With min-blocks=0 the rows alone choose.
// ANY-BLOCKS-LABEL: func.func @proj
// ANY-BLOCKS: %[[ROWS:.*]] = memref.dim %arg0, %c0
// ANY-BLOCKS: %[[BIG:.*]] = arith.cmpi uge, %[[ROWS]], %c16
// ANY-BLOCKS-NEXT: scf.if %[[BIG]] {
// ANY-BLOCKS-NOT: arith.ori
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @proj(%x: memref<?x128xf32>, %w: memref<96x128xf32>, %y: memref<?x96xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x128xf32>, memref<96x128xf32>) outs(%y : memref<?x96xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %0 = arith.mulf %in, %in_0 : f32
    %1 = arith.addf %out, %0 : f32
    linalg.yield %1 : f32
  }
  return
}

// -----

// Not a projection (W is not transposed): left alone.
// CHECK-NOT: gpu.launch
// CHECK: linalg.generic
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @other(%x: memref<?x128xf32>, %w: memref<128x96xf32>, %y: memref<?x96xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x128xf32>, memref<128x96xf32>) outs(%y : memref<?x96xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %0 = arith.mulf %in, %in_0 : f32
    %1 = arith.addf %out, %0 : f32
    linalg.yield %1 : f32
  }
  return
}

// -----

// V4's grouped output projection C[t, g, o] += A[t, g, d] * W[g, o, d]: the
// same two kernels with a group per blockIdx.z.
// CHECK-LABEL: func.func @grouped
// CHECK: %[[G:.*]] = memref.dim %arg1, %c0
// CHECK: scf.if
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}}, {{.*}}, %{{.*}} = %[[G]]) {{.*}} workgroup(
// CHECK: memref.load %arg0[%{{.*}}, %{{.*}}, %{{.*}}]
// CHECK: memref.load %arg1[%{{.*}}, %{{.*}}, %{{.*}}]
// CHECK: gpu.barrier
// CHECK: memref.store {{.*}}, %arg2[
// CHECK: } else {
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}}, {{.*}}, %{{.*}} = %[[G]])
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK-NOT: linalg.generic
// INVARIANT-LABEL: func.func @grouped
// INVARIANT: gpu.launch
// INVARIANT: gpu.terminator
// INVARIANT-NEXT: }
// INVARIANT-NEXT: } else {
// INVARIANT-NEXT: linalg.generic
#ga = affine_map<(t, g, o, d) -> (t, g, d)>
#gw = affine_map<(t, g, o, d) -> (g, o, d)>
#gc = affine_map<(t, g, o, d) -> (t, g, o)>
func.func @grouped(%x: memref<?x8x64xf32>, %w: memref<8x32x64xf32>, %y: memref<?x8x32xf32>) {
  linalg.generic {indexing_maps = [#ga, #gw, #gc], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x8x64xf32>, memref<8x32x64xf32>) outs(%y : memref<?x8x32xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %0 = arith.mulf %in, %in_0 : f32
    %1 = arith.addf %out, %0 : f32
    linalg.yield %1 : f32
  }
  return
}

// -----

// Few outputs over a long depth (8 x 8,192: a gate): 8 warps per output
// below 16 rows, part p of them from depth 32 p, 256 apart (1,024 an unrolled
// iteration); each part's sum into shared memory, then the output's first
// warp adds the 8 parts in order.
// CHECK-LABEL: func.func @gate
// CHECK: } else {
// CHECK: gpu.launch {{.*}} workgroup(%[[PARTS:.*]] : memref<8xf32, #gpu.address_space<workgroup>>)
// CHECK: %[[O:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK: %[[PART:.*]] = arith.remui %{{.*}}, %c8
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[O]], %{{.*}} : index
// CHECK: %[[SUM:.*]] = scf.if %[[IN]] -> (f32)
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c1024
// CHECK-COUNT-8: memref.load
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c256
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK: } else {
// CHECK: memref.store %[[SUM]], %[[PARTS]]
// CHECK: gpu.barrier
// CHECK-COUNT-8: memref.load %[[PARTS]]
// CHECK: memref.store {{.*}}, %arg2
// CHECK: gpu.terminator
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @gate(%x: memref<?x8192xf32>, %w: memref<8x8192xf32>, %y: memref<?x8xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x8192xf32>, memref<8x8192xf32>) outs(%y : memref<?x8xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %p = arith.mulf %in, %in_0 : f32
    %s = arith.addf %out, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// 2,048 columns or more (or a dynamic count): 128 x 128 tiles, 8 x 8
// outputs a thread in four 4 x 4 groups 64 apart, slices padded to 132
// floats; 8 + 8 staged elements a thread; a depth's operands are four
// 16-byte shared loads (A's two runs, then W's) for 64 products, each added
// to its own accumulator in the order of d.
// CHECK-LABEL: func.func @wide
// CHECK: gpu.launch {{.*}} workgroup(%[[AS:.*]] : memref<16x132xf32, #gpu.address_space<workgroup>>, %[[WS:.*]] : memref<16x132xf32, #gpu.address_space<workgroup>>)
// CHECK: scf.for {{.*}} -> ([[F80:(f32, ){79}f32]])
// CHECK-COUNT-8: memref.store {{.*}}, %[[AS]]
// CHECK-COUNT-8: memref.store {{.*}}, %[[WS]]
// CHECK: gpu.barrier
// CHECK-COUNT-2: vector.load %[[AS]]
// CHECK-COUNT-2: vector.load %[[WS]]
// CHECK-NOT: vector.load
// CHECK-COUNT-64: arith.mulf
// CHECK: vector.load %[[AS]]
// CHECK: gpu.barrier
// CHECK-NEXT: scf.yield
// CHECK-COUNT-64: memref.store {{.*}}, %arg2
// BF16-LABEL: func.func @wide
// bf16 from 2,048 columns: 128 x 128 tiles, a warp's 64 x 32 four m16 tiles
// by four n8 ones (16 mma.sync a slice, 64 accumulators a lane).
// BF16: gpu.launch {{.*}} workgroup(%{{.*}} : memref<8x136xi32, #gpu.address_space<workgroup>>, %{{.*}} : memref<8x136xi32, #gpu.address_space<workgroup>>)
// BF16: scf.for {{.*}} iter_args(
// BF16-COUNT-16: nvvm.mma.sync
// BF16-NOT: nvvm.mma.sync
// BF16: gpu.terminator
// 128 x 128 tiles: 2 x 61,440 bytes of rings, 16 mma.sync a k16 step.
// ASYNC-LABEL: func.func @wide
// ASYNC: gpu.launch {{.*}} dynamic_shared_memory_size %c122880_i32 {
// ASYNC: memref.view {{.*}} to memref<3x128x40xf32, #gpu.address_space<workgroup>>
// ASYNC: scf.for
// ASYNC-COUNT-32: nvvm.mma.sync
// ASYNC-NOT: nvvm.mma.sync
// ASYNC: scf.yield
// CHECK-LABEL: func.func @wide_dynamic
// CHECK: gpu.launch {{.*}} workgroup(%{{.*}} : memref<16x132xf32, #gpu.address_space<workgroup>>
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @wide(%x: memref<?x64xf32>, %w: memref<2048x64xf32>, %y: memref<?x2048xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x64xf32>, memref<2048x64xf32>) outs(%y : memref<?x2048xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %p = arith.mulf %in, %in_0 : f32
    %s = arith.addf %out, %p : f32
    linalg.yield %s : f32
  }
  return
}
func.func @wide_dynamic(%x: memref<?x64xf32>, %w: memref<?x64xf32>, %y: memref<?x?xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x64xf32>, memref<?x64xf32>) outs(%y : memref<?x?xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %p = arith.mulf %in, %in_0 : f32
    %s = arith.addf %out, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A bf16 weight (dsf-to-linalg's weight-storage=declared): both kernels load
// its bf16 elements and widen each as it is loaded; the tiled kernel stages
// the widened values, so its shared tiles and its sums stay f32.
// With cp.async the bf16 weight's ring holds its elements as stored
// ([3][64][40] bf16, 15,360 bytes after A's 30,720), 8 a copy, and a B
// fragment's pair is one 4-byte load.
// ASYNC-LABEL: func.func @bf16_weight
// ASYNC: gpu.launch {{.*}} dynamic_shared_memory_size %c46080_i32 {
// ASYNC: %[[RW:.*]] = memref.view %{{.*}}[%c30720][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<3x64x40xbf16, #gpu.address_space<workgroup>>
// ASYNC: nvgpu.device_async_copy %arg1[%{{.*}}, %{{.*}}], %[[RW]][%c0{{.*}}, %{{.*}}, %{{.*}}], 8, %{{.*}} {bypassL1} : memref<96x128xbf16> to memref<3x64x40xbf16, #gpu.address_space<workgroup>>
// ASYNC: %[[P:.*]] = vector.load %[[RW]][{{.*}}] {alignment = 4 : i64} : memref<3x64x40xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
// ASYNC-NEXT: vector.bitcast %[[P]] : vector<2xbf16> to vector<1xi32>
// ASYNC: nvvm.mma.sync
// CHECK-LABEL: func.func @bf16_weight
// CHECK: gpu.launch {{.*}} workgroup(%{{.*}} : memref<16x68xf32, #gpu.address_space<workgroup>>
// CHECK: %[[T:.*]] = memref.load %arg1[%{{.*}}, %{{.*}}] : memref<96x128xbf16>
// CHECK-NEXT: arith.extf %[[T]] : bf16 to f32
// The warp kernel reads the weight's depths in pairs, one 32-bit load each,
// when its base is 4-byte aligned (checked in the kernel): 4 pairs a lane an
// iteration, every pair's load issued before the first extension.
// CHECK: %[[BASE:.*]] = memref.extract_aligned_pointer_as_index %arg1 : memref<96x128xbf16> -> index
// CHECK: %[[MIS:.*]] = arith.remui %[[BASE]], %c4
// CHECK: %[[ALIGNED:.*]] = arith.cmpi eq, %[[MIS]], %c0
// CHECK: scf.if %[[ALIGNED]] -> (f32) {
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c128
// CHECK: %[[P:.*]] = vector.load %arg1[%{{.*}}, %{{.*}}] {alignment = 4 : i64} : memref<96x128xbf16>, vector<2xbf16>
// CHECK-NEXT: %[[P0:.*]] = vector.extract %[[P]][0] : bf16 from vector<2xbf16>
// CHECK-NOT: arith.extf
// CHECK-COUNT-3: vector.load %arg1[%{{.*}}, %{{.*}}] {alignment = 4 : i64} : memref<96x128xbf16>, vector<2xbf16>
// CHECK: %[[P0F:.*]] = arith.extf %[[P0]] : bf16 to f32
// CHECK-NEXT: arith.mulf %{{.*}}, %[[P0F]] : f32
// The pairs' last ones one pair at a time.
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c32
// CHECK: vector.load %arg1
// CHECK: } else {
// Otherwise the lanes load 8 depths together (4 for f32): the same bytes
// of the weight in flight; each element is extended only after all 8 loads
// are issued (an extension right after its load would wait for it).
// CHECK-NOT: vector.load
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c256
// CHECK: %[[G:.*]] = memref.load %arg1[%{{.*}}, %{{.*}}] : memref<96x128xbf16>
// CHECK-NOT: arith.extf
// CHECK-COUNT-7: memref.load %arg1[%{{.*}}, %{{.*}}] : memref<96x128xbf16>
// CHECK-NEXT: %[[GF:.*]] = arith.extf %[[G]] : bf16 to f32
// CHECK-NEXT: arith.mulf %{{.*}}, %[[GF]] : f32
// CHECK: scf.yield
// CHECK-NOT: linalg.generic
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @bf16_weight(%x: memref<?x128xf32>, %w: memref<96x128xbf16>, %y: memref<?x96xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x128xf32>, memref<96x128xbf16>) outs(%y : memref<?x96xf32>) {
  ^bb0(%in: f32, %in_0: bf16, %out: f32):
    %wf = arith.extf %in_0 : bf16 to f32
    %p = arith.mulf %in, %wf : f32
    %s = arith.addf %out, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// No pairs where a row's length is odd (an odd depth's pair would straddle
// two rows, and half the rows start 2 bytes past a 4-byte boundary) or the
// weight is a strided view (its offset unknown): one depth a load.
// Rows of 127 depths are not 16-byte aligned, a strided view's offset is
// unknown: both stage through registers.
// ASYNC-LABEL: func.func @bf16_odd_rows
// ASYNC-NOT: dynamic_shared_memory
// ASYNC: gpu.launch {{.*}} workgroup(%{{.*}} : memref<8x72xi32, #gpu.address_space<workgroup>>
// ASYNC-NOT: nvgpu.device_async_copy
// ASYNC-LABEL: func.func @bf16_view
// ASYNC-NOT: dynamic_shared_memory
// ASYNC: gpu.launch {{.*}} workgroup(%{{.*}} : memref<8x72xi32, #gpu.address_space<workgroup>>
// ASYNC-NOT: nvgpu.device_async_copy
// ASYNC: return
// CHECK-LABEL: func.func @bf16_odd_rows
// CHECK-NOT: vector<2xbf16>
// CHECK-NOT: extract_aligned_pointer
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c256
// CHECK-NEXT: memref.load
// CHECK-NEXT: memref.load %arg1[%{{.*}}, %{{.*}}] : memref<96x127xbf16>
// CHECK-NOT: vector.load
// CHECK: return
// CHECK-LABEL: func.func @bf16_view
// CHECK-NOT: vector<2xbf16>
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c256
// CHECK-NEXT: memref.load
// CHECK-NEXT: memref.load %{{.*}}[%{{.*}}, %{{.*}}] : memref<96x128xbf16, strided<[256, 1], offset: ?>>
// CHECK-NOT: vector.load
// CHECK: return
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @bf16_odd_rows(%x: memref<?x127xf32>, %w: memref<96x127xbf16>, %y: memref<?x96xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x127xf32>, memref<96x127xbf16>) outs(%y : memref<?x96xf32>) {
  ^bb0(%in: f32, %in_0: bf16, %out: f32):
    %wf = arith.extf %in_0 : bf16 to f32
    %p = arith.mulf %in, %wf : f32
    %s = arith.addf %out, %p : f32
    linalg.yield %s : f32
  }
  return
}
func.func @bf16_view(%x: memref<?x128xf32>, %all: memref<96x256xbf16>, %at: index, %y: memref<?x96xf32>) {
  %w = memref.subview %all[0, %at] [96, 128] [1, 1] : memref<96x256xbf16> to memref<96x128xbf16, strided<[256, 1], offset: ?>>
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x128xf32>, memref<96x128xbf16, strided<[256, 1], offset: ?>>) outs(%y : memref<?x96xf32>) {
  ^bb0(%in: f32, %in_0: bf16, %out: f32):
    %wf = arith.extf %in_0 : bf16 to f32
    %p = arith.mulf %in, %wf : f32
    %s = arith.addf %out, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// C zeroed right before the product (an allocation between is no memory
// access of C): each kernel stores its sums instead of adding them to C,
// and the fill (a kernel of its own) goes. With batch-invariant the generic
// that stays for few rows still adds to C, so the fill moves in with it.
// CHECK-LABEL: func.func @zeroed
// CHECK-NOT: linalg.fill
// CHECK: gpu.launch
// CHECK-NOT: memref.load %arg2[
// CHECK: memref.store %{{.*}}, %arg2[%{{.*}}, %{{.*}}] : memref<?x96xf32>
// CHECK: gpu.terminator
// CHECK: gpu.launch
// CHECK-NOT: memref.load %arg2[
// CHECK: memref.store %{{.*}}, %arg2[%{{.*}}, %{{.*}}] : memref<?x96xf32>
// CHECK-NOT: linalg.fill
// CHECK: return
// INVARIANT-LABEL: func.func @zeroed
// INVARIANT-NOT: linalg.fill
// INVARIANT: gpu.launch
// INVARIANT-NOT: memref.load %arg2[
// INVARIANT: memref.store %{{.*}}, %arg2
// INVARIANT: } else {
// INVARIANT-NEXT: linalg.fill ins(%{{.*}} : f32) outs(%arg2 : memref<?x96xf32>)
// INVARIANT-NEXT: linalg.generic
// A fill of another value, or a write of C between, keeps the fill and the
// kernels' additions.
// CHECK-LABEL: func.func @not_zeroed
// CHECK: linalg.fill
// CHECK: gpu.launch
// CHECK: %[[OLD:.*]] = memref.load %arg2[%{{.*}}, %{{.*}}] : memref<?x96xf32>
// CHECK: arith.addf %[[OLD]]
// CHECK-LABEL: func.func @written_between
// CHECK: linalg.fill
// CHECK: memref.store
// CHECK: gpu.launch
// CHECK: %[[OLD:.*]] = memref.load %arg2[%{{.*}}, %{{.*}}] : memref<?x96xf32>
// CHECK: arith.addf %[[OLD]]
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @zeroed(%x: memref<?x128xf32>, %w: memref<96x128xf32>, %y: memref<?x96xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<?x96xf32>)
  %scratch = memref.alloc() : memref<4xf32>
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x128xf32>, memref<96x128xf32>) outs(%y : memref<?x96xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %p = arith.mulf %in, %in_0 : f32
    %s = arith.addf %out, %p : f32
    linalg.yield %s : f32
  }
  memref.dealloc %scratch : memref<4xf32>
  return
}
func.func @not_zeroed(%x: memref<?x128xf32>, %w: memref<96x128xf32>, %y: memref<?x96xf32>) {
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%one : f32) outs(%y : memref<?x96xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x128xf32>, memref<96x128xf32>) outs(%y : memref<?x96xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %p = arith.mulf %in, %in_0 : f32
    %s = arith.addf %out, %p : f32
    linalg.yield %s : f32
  }
  return
}
func.func @written_between(%x: memref<?x128xf32>, %w: memref<96x128xf32>, %y: memref<?x96xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %c0 = arith.constant 0 : index
  linalg.fill ins(%zero : f32) outs(%y : memref<?x96xf32>)
  memref.store %one, %y[%c0, %c0] : memref<?x96xf32>
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x128xf32>, memref<96x128xf32>) outs(%y : memref<?x96xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %p = arith.mulf %in, %in_0 : f32
    %s = arith.addf %out, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// The product reads the zeroed buffer itself (through a view): the fill
// stays, since the product reads its zeros.
// CHECK-LABEL: func.func @reads_zeroed
// CHECK: linalg.fill
// CHECK: gpu.launch
// CHECK: %[[OLD:.*]] = memref.load %arg1[%{{.*}}, %{{.*}}] : memref<?x96xf32>
// CHECK: arith.addf %[[OLD]]
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @reads_zeroed(%w: memref<96x64xf32>, %y: memref<?x96xf32>) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %n = memref.dim %y, %c0 : memref<?x96xf32>
  linalg.fill ins(%zero : f32) outs(%y : memref<?x96xf32>)
  %in = memref.subview %y[0, 0] [%n, 64] [1, 1] : memref<?x96xf32> to memref<?x64xf32, strided<[96, 1]>>
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%in, %w : memref<?x64xf32, strided<[96, 1]>>, memref<96x64xf32>) outs(%y : memref<?x96xf32>) {
  ^bb0(%i: f32, %i_0: f32, %o: f32):
    %p = arith.mulf %i, %i_0 : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A product the tiles do not take (8 tiles of 64 x 64, fewer than 66) with a
// deep K (1,000) and bf16 operands staged by cp.async: from split-min-rows
// (8) up to 127 rows, 64 x 64 tiles with the depth split in 3 parts of
// 352 depths (11 stages; the last 296): block y is part y mod 3 of row tile
// y div 3, its stages from depth 352 part up to min(K, 352 (part + 1)), its
// sums stored to a scratch buffer of 3 x M x 512 floats (part-major); then
// a thread per output adds the 3 parts in order and stores the sum into C
// (zeroed just before: the fill goes). Fewer rows: the warp kernel.
// ASYNC-LABEL: func.func @split
// ASYNC: %[[ROWS:.*]] = memref.dim %arg0, %c0
// ASYNC: %[[TILED:.*]] = arith.andi
// ASYNC: %[[FROM:.*]] = arith.cmpi uge, %[[ROWS]], %c8{{.*}}
// ASYNC: %[[BELOW:.*]] = arith.cmpi ult, %[[ROWS]], %c128{{.*}}
// ASYNC: %[[SPLIT:.*]] = arith.andi %[[FROM]], %[[BELOW]]
// ASYNC: scf.if %[[TILED]] {
// ASYNC: gpu.launch
// ASYNC: } else {
// ASYNC-NEXT: scf.if %[[SPLIT]] {
// ASYNC: %[[COLTILES:.*]] = arith.divui %{{.*}}, %c64{{.*}}
// ASYNC: %[[ROWTILES:.*]] = arith.divui %{{.*}}, %c64{{.*}}
// ASYNC: %[[GRIDY:.*]] = arith.muli %[[ROWTILES]], %c3{{.*}}
// ASYNC: %[[OUTPUTS:.*]] = arith.muli %[[ROWS]], %[[COLS:.*]] : index
// ASYNC: %[[SCRATCH:.*]] = memref.alloc(%{{.*}}) : memref<?xf32>
// ASYNC: gpu.launch blocks(%{{.*}}, %[[BY:.*]], %{{.*}}) in (%{{.*}} = %[[COLTILES]], %{{.*}} = %[[GRIDY]], %{{.*}} = %{{.*}}) {{.*}} dynamic_shared_memory_size %c46080_i32 {
// ASYNC: %[[PART:.*]] = arith.remui %[[BY]], %c3{{.*}}
// ASYNC: %[[TILE:.*]] = arith.divui %[[BY]], %c3{{.*}}
// ASYNC: %[[BEGIN:.*]] = arith.muli %[[PART]], %c352{{.*}}
// ASYNC: %[[LIMIT:.*]] = arith.addi %[[BEGIN]], %c352{{.*}}
// ASYNC: %[[END:.*]] = arith.minui %{{.*}}, %[[LIMIT]]
// ASYNC: %[[DEPTHS:.*]] = arith.subi %[[END]], %[[BEGIN]]
// ASYNC: %[[STAGES:.*]] = arith.divui
// ASYNC: arith.addi %[[BEGIN]],
// ASYNC: arith.cmpi ult, %{{.*}}, %[[END]]
// ASYNC: nvgpu.device_async_copy %arg0
// ASYNC: scf.for %{{.*}} = %c0{{.*}} to %[[STAGES]]
// ASYNC-COUNT-8: nvvm.mma.sync
// ASYNC-NOT: nvvm.mma.sync
// ASYNC: scf.yield
// ASYNC: memref.store %{{.*}}, %[[SCRATCH]][%{{.*}}] : memref<?xf32>
// ASYNC-NOT: memref.store {{.*}}, %arg2
// ASYNC: gpu.terminator
// ASYNC: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in
// ASYNC: %[[I:.*]] = arith.addi
// ASYNC: arith.cmpi ult, %[[I]], %[[OUTPUTS]]
// ASYNC: %[[P0:.*]] = memref.load %[[SCRATCH]]
// ASYNC: %[[P1:.*]] = memref.load %[[SCRATCH]]
// ASYNC: %[[S1:.*]] = arith.addf %[[P0]], %[[P1]] : f32
// ASYNC: %[[P2:.*]] = memref.load %[[SCRATCH]]
// ASYNC: %[[S2:.*]] = arith.addf %[[S1]], %[[P2]] : f32
// ASYNC-NEXT: memref.store %[[S2]], %arg2[
// ASYNC: gpu.terminator
// ASYNC: memref.dealloc %[[SCRATCH]] : memref<?xf32>
// ASYNC-NEXT: } else {
// ASYNC: gpu.shuffle  xor
// ASYNC-NOT: linalg.fill
// The split-depth tiles stage a bf16 copy of A too, made in their branch.
// COPY-LABEL: func.func @split
// COPY: } else {
// COPY-NEXT: scf.if
// COPY: %[[COPY:.*]] = memref.alloc(%{{.*}}) : memref<?x1000xbf16>
// COPY: arith.truncf %{{.*}} : f32 to bf16
// COPY: %[[SCRATCH:.*]] = memref.alloc(%{{.*}}) : memref<?xf32>
// COPY: gpu.launch {{.*}} dynamic_shared_memory_size %c30720_i32 {
// COPY: nvgpu.device_async_copy %[[COPY]]
// COPY: memref.dealloc %[[SCRATCH]]
// COPY: memref.dealloc %[[COPY]]
// COPY-NEXT: } else {
// Without a split (split-min-rows=0) and batch-invariant: no scratch.
// NOSPLIT-LABEL: func.func @split
// NOSPLIT-NOT: memref.alloc({{.*}}) : memref<?xf32>
// NOSPLIT: gpu.shuffle  xor
// INVARIANT-BF16-LABEL: func.func @split
// INVARIANT-BF16-NOT: memref.alloc({{.*}}) : memref<?xf32>
// INVARIANT-BF16: linalg.generic
// A shallow depth (128: one part) or a dynamic one keeps the warp kernel.
// ASYNC-LABEL: func.func @shallow
// ASYNC-NOT: memref.alloc
// ASYNC: gpu.shuffle  xor
// ASYNC-LABEL: func.func @dynamic_depth
// ASYNC-NOT: memref.alloc
// ASYNC: return
#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d1, d2)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @split(%x: memref<?x1000xf32>, %w: memref<512x1000xbf16>, %y: memref<?x512xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<?x512xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x1000xf32>, memref<512x1000xbf16>) outs(%y : memref<?x512xf32>) {
  ^bb0(%in: f32, %in_0: bf16, %out: f32):
    %wf = arith.extf %in_0 : bf16 to f32
    %p = arith.mulf %in, %wf : f32
    %s = arith.addf %out, %p : f32
    linalg.yield %s : f32
  }
  return
}
func.func @shallow(%x: memref<?x128xf32>, %w: memref<512x128xbf16>, %y: memref<?x512xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x128xf32>, memref<512x128xbf16>) outs(%y : memref<?x512xf32>) {
  ^bb0(%in: f32, %in_0: bf16, %out: f32):
    %wf = arith.extf %in_0 : bf16 to f32
    %p = arith.mulf %in, %wf : f32
    %s = arith.addf %out, %p : f32
    linalg.yield %s : f32
  }
  return
}
func.func @dynamic_depth(%x: memref<?x?xf32>, %w: memref<512x?xbf16>, %y: memref<?x512xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x?xf32>, memref<512x?xbf16>) outs(%y : memref<?x512xf32>) {
  ^bb0(%in: f32, %in_0: bf16, %out: f32):
    %wf = arith.extf %in_0 : bf16 to f32
    %p = arith.mulf %in, %wf : f32
    %s = arith.addf %out, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// An FP8 weight bound packed (weight-storage=released: E4M3 codes i8
// [40, 64], a UE8M0 scale a 32 x 32 block, i8 [2, 2]; dsf.packed_fp8 marks
// the product): the register-staged tiles decode each code as they stage
// it, its scale read at (col / 32, d / 32); the warp kernel reads eight
// codes a 64-bit load (a row's 64 bytes keep loads aligned once the base
// is), converts them two an instruction to f16 (cvt.rn.f16x2.e4m3x2), takes
// their block's scale and reads their activations 16 bytes a load; or reads
// one code a load when the codes' base is not 8-byte aligned or the
// activations' not 16-byte.
// With cp.async (ASYNC) the tiles copy the codes as stored, 16 bytes a copy
// (a 64-column tile's stage is 128 copies: the first 128 threads take one
// each), into a ring of i8 stages beside A's; each stage's scales are read
// before the wait, then every thread decodes 8 codes (one 8-byte load, four
// conversions) times its row's scale into one bf16 stage, a barrier, and
// the mma fragments read that stage as a bf16 weight's.
// CHECK-LABEL: func.func @project_fp8
// CHECK: gpu.launch
// CHECK: memref.load %arg1[%{{.*}}, %{{.*}}] : memref<40x64xi8>
// CHECK: memref.load %arg2[%{{.*}}, %{{.*}}] : memref<2x2xi8>
// CHECK: gpu.barrier
// CHECK: } else {
// CHECK: memref.extract_aligned_pointer_as_index %arg1 : memref<40x64xi8> -> index
// CHECK: arith.remui %{{.*}}, %c8
// CHECK: memref.extract_aligned_pointer_as_index %arg0 : memref<?x64xf32> -> index
// CHECK: scf.if %{{.*}} -> (f32) {
// CHECK: vector.load %arg0[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x64xf32>, vector<4xf32>
// CHECK: vector.load %arg1[%{{.*}}, %{{.*}}] {alignment = 8 : i64} : memref<40x64xi8>, vector<8xi8>
// CHECK: memref.load %arg2[%{{.*}}, %{{.*}}] : memref<2x2xi8>
// CHECK: vector.shuffle %{{.*}}, %{{.*}} [0, 1] : vector<8xi8>, vector<8xi8>
// CHECK: nvvm.convert.f8x2.to.f16x2 %{{.*}} : vector<2xi8>(f8E4M3FN) -> vector<2xf16>
// CHECK-COUNT-3: nvvm.convert.f8x2.to.f16x2
// CHECK: } else {
// CHECK: memref.load %arg1[%{{.*}}, %{{.*}}] : memref<40x64xi8>
// CHECK-NOT: linalg.generic
// CHECK: return
// ANY-BLOCKS-LABEL: func.func @project_fp8
// ASYNC-LABEL: func.func @project_fp8
// ASYNC: gpu.launch {{.*}} dynamic_shared_memory_size %c41984_i32
// ASYNC: memref.view %{{.*}}[%c0{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<3x64x40xf32, #gpu.address_space<workgroup>>
// ASYNC: %[[CODES:.*]] = memref.view %{{.*}}[%c30720][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<3x64x32xi8, #gpu.address_space<workgroup>>
// ASYNC: %[[DECODED:.*]] = memref.view %{{.*}}[%c36864][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<1x64x40xbf16, #gpu.address_space<workgroup>>
// ASYNC: %[[ACTIVE:.*]] = arith.cmpi ult, %{{.*}}, %c128{{.*}} : index
// ASYNC: scf.if %[[ACTIVE]] {
// ASYNC-NEXT: nvgpu.device_async_copy %arg1[%{{.*}}, %{{.*}}], %[[CODES]][%{{.*}}, %{{.*}}, %{{.*}}], 16, %{{.*}} {bypassL1} : memref<40x64xi8> to memref<3x64x32xi8, #gpu.address_space<workgroup>>
// ASYNC: scf.for
// ASYNC: memref.load %arg2[%{{.*}}, %{{.*}}] : memref<2x2xi8>
// ASYNC: nvvm.cp.async.wait.group 1
// ASYNC-NEXT: gpu.barrier
// ASYNC: vector.load %[[CODES]][%{{.*}}, %{{.*}}, %{{.*}}] {alignment = 8 : i64} : memref<3x64x32xi8, #gpu.address_space<workgroup>>, vector<8xi8>
// ASYNC-COUNT-4: nvvm.convert.f8x2.to.f16x2
// ASYNC: arith.truncf %{{.*}} : vector<8xf32> to vector<8xbf16>
// ASYNC: vector.store %{{.*}}, %[[DECODED]][%c0{{.*}}, %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<1x64x40xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// ASYNC-NEXT: gpu.barrier
// ASYNC: vector.load %[[DECODED]][%c0{{.*}}, %{{.*}}, %{{.*}}] {alignment = 4 : i64} : memref<1x64x40xbf16, #gpu.address_space<workgroup>>, vector<2xbf16>
// ASYNC: nvvm.mma.sync
// ASYNC: return
#fa = affine_map<(t, o, d) -> (t, d)>
#fw = affine_map<(t, o, d) -> (o, d)>
#fc = affine_map<(t, o, d) -> (t, o)>
func.func @project_fp8(%x: memref<?x64xf32>, %codes: memref<40x64xi8>, %scales: memref<2x2xi8>,
                       %y: memref<?x40xf32>) {
  linalg.generic {indexing_maps = [#fa, #fw, #fc], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %codes : memref<?x64xf32>, memref<40x64xi8>) outs(%y : memref<?x40xf32>)
      attrs = {dsf.packed_fp8 = array<i64: 32, 32>} {
  ^bb0(%a: f32, %c: i8, %acc: f32):
    %o = linalg.index 1 : index
    %d = linalg.index 2 : index
    %c32 = arith.constant 32 : index
    %bo = arith.divui %o, %c32 : index
    %bd = arith.divui %d, %c32 : index
    %s = memref.load %scales[%bo, %bd] : memref<2x2xi8>
    %ci = arith.extui %c : i8 to i32
    %si = arith.extui %s : i8 to i32
    %sum = arith.addi %ci, %si : i32
    %v = arith.uitofp %sum : i32 to f32
    %p = arith.mulf %a, %v : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// V4's grouped output projection with its FP8 weight bound packed (E4M3
// codes i8 [2, 40, 64] and UE8M0 scales i8 [2, 2, 2], a group's own; the
// product marked dsf.packed_fp8): a group a blockIdx.z, as the bf16 grouped
// product. Every kernel reads codes and scales at the block's group: the
// register-staged tiles code by code, the warp kernel eight codes a load,
// and (ASYNC) the staged codes' 16-byte copies from the group's rows, their
// scales read before the wait, then decoded into the bf16 stage the mma
// reads.
// CHECK-LABEL: func.func @project_grouped_fp8
// CHECK: gpu.launch blocks(%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %[[Z:[a-z0-9_]+]]) in
// CHECK: memref.load %arg1[%[[Z]], %{{.*}}, %{{.*}}] : memref<2x40x64xi8>
// CHECK: memref.load %arg2[%[[Z]], %{{.*}}, %{{.*}}] : memref<2x2x2xi8>
// CHECK: gpu.launch blocks(%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %[[WZ:[a-z0-9_]+]]) in
// CHECK: vector.load %arg1[%[[WZ]], %{{.*}}, %{{.*}}] {alignment = 8 : i64} : memref<2x40x64xi8>, vector<8xi8>
// CHECK: memref.load %arg2[%[[WZ]], %{{.*}}, %{{.*}}] : memref<2x2x2xi8>
// CHECK-COUNT-4: nvvm.convert.f8x2.to.f16x2
// CHECK-NOT: linalg.generic
// CHECK: return
// ASYNC-LABEL: func.func @project_grouped_fp8
// ASYNC: gpu.launch blocks(%{{[a-z0-9_]+}}, %{{[a-z0-9_]+}}, %[[Z:[a-z0-9_]+]]) in {{.*}} dynamic_shared_memory_size %c41984_i32
// ASYNC: %[[CODES:.*]] = memref.view %{{.*}}[%c30720][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<3x64x32xi8, #gpu.address_space<workgroup>>
// ASYNC: nvgpu.device_async_copy %arg1[%[[Z]], %{{.*}}, %{{.*}}], %[[CODES]][%{{.*}}, %{{.*}}, %{{.*}}], 16, %{{.*}} {bypassL1} : memref<2x40x64xi8> to memref<3x64x32xi8, #gpu.address_space<workgroup>>
// ASYNC: scf.for
// ASYNC: memref.load %arg2[%[[Z]], %{{.*}}, %{{.*}}] : memref<2x2x2xi8>
// ASYNC: nvvm.cp.async.wait.group 1
// ASYNC-COUNT-4: nvvm.convert.f8x2.to.f16x2
// ASYNC: nvvm.mma.sync
// ASYNC: return
#ga = affine_map<(t, g, o, d) -> (t, g, d)>
#gw = affine_map<(t, g, o, d) -> (g, o, d)>
#gc = affine_map<(t, g, o, d) -> (t, g, o)>
func.func @project_grouped_fp8(%x: memref<?x2x64xf32>, %codes: memref<2x40x64xi8>, %scales: memref<2x2x2xi8>,
                               %y: memref<?x2x40xf32>) {
  linalg.generic {indexing_maps = [#ga, #gw, #gc], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %codes : memref<?x2x64xf32>, memref<2x40x64xi8>) outs(%y : memref<?x2x40xf32>)
      attrs = {dsf.packed_fp8 = array<i64: 32, 32>} {
  ^bb0(%a: f32, %c: i8, %acc: f32):
    %g = linalg.index 1 : index
    %o = linalg.index 2 : index
    %d = linalg.index 3 : index
    %c32 = arith.constant 32 : index
    %bo = arith.divui %o, %c32 : index
    %bd = arith.divui %d, %c32 : index
    %s = memref.load %scales[%g, %bo, %bd] : memref<2x2x2xi8>
    %ci = arith.extui %c : i8 to i32
    %si = arith.extui %s : i8 to i32
    %sum = arith.addi %ci, %si : i32
    %v = arith.uitofp %sum : i32 to f32
    %p = arith.mulf %a, %v : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  return
}
