// RUN: dsf-opt %s --dsf-gpu-grouped-experts=min-rows=16 --split-input-file | FileCheck %s
// RUN: dsf-opt %s --dsf-gpu-grouped-experts="min-rows=16 batch-invariant=true" --split-input-file | FileCheck --check-prefix=INVARIANT %s
// RUN: dsf-opt %s --dsf-gpu-grouped-experts="min-rows=16 math=tf32" --split-input-file | FileCheck --check-prefix=TF32 %s
// RUN: dsf-opt %s --dsf-gpu-grouped-experts="min-rows=16 min-rows-per-expert=0" --split-input-file | FileCheck --check-prefix=ANY-SPREAD %s
// RUN: dsf-opt %s --dsf-gpu-grouped-experts="min-rows=16 math=bf16" --split-input-file | FileCheck --check-prefix=ASYNC %s
// RUN: dsf-opt %s --dsf-gpu-grouped-experts="min-rows=16 math=bf16 bf16-copies=true" --split-input-file | FileCheck --check-prefix=COPY %s
// RUN: dsf-opt %s --dsf-gpu-grouped-experts="min-rows=16 math=bf16 cp-async=false" --split-input-file | FileCheck --check-prefix=REGS %s
// RUN: dsf-opt %s --dsf-gpu-grouped-experts="min-rows=16 wide-min-rows-per-expert=0" --split-input-file | FileCheck --check-prefix=WIDE0 %s

// min-rows-per-expert=0: the rows alone choose (times 0 experts).
// ANY-SPREAD-LABEL: func.func @project
// ANY-SPREAD: arith.muli %{{.*}}, %c0

// math=tf32: each expert's tile on the tensor cores.
// TF32-LABEL: func.func @project
// TF32: workgroup({{.*}} : memref<16x72xf32, #gpu.address_space<workgroup>>
// TF32-COUNT-8: nvvm.mma.sync
// TF32-NOT: nvvm.mma.sync
// TF32: gpu.terminator

// The routed experts' projection g[t, s, :] += W[e[t, s]] x[t]: from 16
// (token, slot) rows, per-expert counts and ranks by atomics, the starts on
// one thread, the permutation into expert order, then the tiled kernel whose
// block finds its expert and reads its rows through the permutation; below
// 16 rows, or below 32 rows an expert on average (min-rows-per-expert: a
// batched decode's few rows an expert would leave its tile mostly padding),
// a warp per output, its grid's rows fastest. The generic is gone.
// CHECK-LABEL: func.func @project
// CHECK: %[[T:.*]] = memref.dim %arg0, %c0
// CHECK: %[[E:.*]] = memref.dim %arg2, %c0
// CHECK: %[[ROWS:.*]] = arith.muli %[[T]], %c2
// CHECK: %[[BIG:.*]] = arith.cmpi uge, %[[ROWS]], %c16
// CHECK: %[[PADDED:.*]] = arith.muli %[[E]], %c32
// CHECK: %[[DENSE:.*]] = arith.cmpi uge, %[[ROWS]], %[[PADDED]]
// CHECK: %[[GROUPED:.*]] = arith.andi %[[BIG]], %[[DENSE]]
// CHECK: scf.if %[[GROUPED]] {
// CHECK: %[[COUNTS:.*]] = memref.alloc(%{{.*}}) : memref<?xi32>
// CHECK: linalg.fill ins(%{{.*}} : i32) outs(%[[COUNTS]] : memref<?xi32>)
// CHECK: scf.parallel
// CHECK: memref.atomic_rmw addi %{{.*}}, %[[COUNTS]]
// CHECK: %[[STARTS:.*]] = memref.alloc(%{{.*}}) : memref<2x?xi32>
// CHECK: scf.parallel
// CHECK: scf.for
// CHECK: %[[PERM:.*]] = memref.alloc(%{{.*}}) : memref<?xi32>
// CHECK: scf.parallel
// CHECK: memref.store {{.*}}, %[[PERM]]
// CHECK: gpu.launch {{.*}} workgroup(
// CHECK: scf.for
// CHECK: memref.load %[[STARTS]]
// CHECK: memref.load %[[PERM]]
// CHECK: memref.load %arg1
// CHECK: memref.load %arg2
// CHECK: gpu.barrier
// CHECK: memref.store {{.*}}, %arg3
// CHECK: memref.dealloc %[[COUNTS]]
// CHECK: } else {
// CHECK: %[[BLOCKS:.*]] = arith.muli %{{.*}}, %[[ROWS]]
// CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[BLOCKS]],
// CHECK: arith.remui %[[BX]], %[[ROWS]]
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK: memref.store {{.*}}, %arg3
// CHECK-NOT: linalg.generic

// Batch-invariant: every row count takes the tiled kernel.
// INVARIANT-LABEL: func.func @project
// INVARIANT: %[[TRUE:.*]] = arith.constant true
// INVARIANT: scf.if %[[TRUE]]
// INVARIANT: gpu.launch {{.*}} workgroup(
#e = affine_map<(t, s, i, d) -> (t, s)>
#x = affine_map<(t, s, i, d) -> (t, d)>
#g = affine_map<(t, s, i, d) -> (t, s, i)>
func.func @project(%experts: memref<?x2xi32>, %x: memref<?x64xf32>, %w: memref<4x32x64xf32>, %g: memref<?x2x32xf32>) {
  linalg.generic {indexing_maps = [#e, #x, #g], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%experts, %x : memref<?x2xi32>, memref<?x64xf32>) outs(%g : memref<?x2x32xf32>) attrs = {dsf.experts = "project"} {
  ^bb0(%e: i32, %a: f32, %acc: f32):
    %ei = arith.index_cast %e : i32 to index
    %i = linalg.index 2 : index
    %d = linalg.index 3 : index
    %wv = memref.load %w[%ei, %i, %d] : memref<4x32x64xf32>
    %p = arith.mulf %wv, %a : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// The down product y[t, :] += sum over s of W2[e[t, s]] h[t, s, :]: each
// (token, slot) row's product goes to z[t, s, :], then the slots are added
// in order into y.
// The down product's rows are h[token, slot]: (token, slot) from the
// permutation, then the depth.
// ASYNC-LABEL: func.func @down
// ASYNC: nvgpu.device_async_copy %arg1[%{{.*}}, %{{.*}}, %{{.*}}], %{{.*}}[%c0{{.*}}, %{{.*}}, %{{.*}}], 4, %{{.*}} {bypassL1} : memref<?x2x32xf32> to memref<3x64x40xf32, #gpu.address_space<workgroup>>
// CHECK-LABEL: func.func @down
// CHECK: %[[Z:.*]] = memref.alloc(%{{.*}}, %{{.*}}) : memref<?x2x?xf32>
// CHECK: scf.if
// CHECK: gpu.launch {{.*}} workgroup(
// CHECK: memref.store {{.*}}, %[[Z]]
// CHECK: } else {
// CHECK: gpu.launch
// CHECK: memref.store {{.*}}, %[[Z]]
// CHECK: scf.parallel
// CHECK: memref.load %arg3
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c2
// CHECK: memref.load %[[Z]]
// CHECK: memref.store {{.*}}, %arg3
// CHECK: memref.dealloc %[[Z]]
// CHECK-NOT: linalg.generic

// -----

#e = affine_map<(t, n, s, i) -> (t, s)>
#h = affine_map<(t, n, s, i) -> (t, s, i)>
#y = affine_map<(t, n, s, i) -> (t, n)>
func.func @down(%experts: memref<?x2xi32>, %h: memref<?x2x32xf32>, %w: memref<4x64x32xf32>, %y: memref<?x64xf32>) {
  linalg.generic {indexing_maps = [#e, #h, #y], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%experts, %h : memref<?x2xi32>, memref<?x2x32xf32>) outs(%y : memref<?x64xf32>) attrs = {dsf.experts = "down"} {
  ^bb0(%e: i32, %a: f32, %acc: f32):
    %ei = arith.index_cast %e : i32 to index
    %n = linalg.index 1 : index
    %i = linalg.index 3 : index
    %wv = memref.load %w[%ei, %n, %i] : memref<4x64x32xf32>
    %p = arith.mulf %wv, %a : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A bf16 expert weight: the warp kernel reads each slot's expert row two
// depths a 32-bit load when the weight's base is 4-byte aligned (one at a
// time otherwise), and widens after the loads.
// With bf16 math the tiled kernel copies by cp.async: each thread's A rows
// found once through the permutation (a load of perm per chunk, before the
// stages), x[token] 4 f32 a copy, the block's expert's rows 8 bf16 a copy.
// With bf16-copies the f32 x is rounded to a bf16 copy once, after
// the permutation, and the tiles stage the copy's gathered rows 8 bf16 a
// cp.async; the copy is freed with the grouping's buffers.
// COPY-LABEL: func.func @project_bf16
// COPY: %[[COPY:.*]] = memref.alloc(%{{.*}}) : memref<?x64xbf16>
// COPY: arith.truncf %{{.*}} : f32 to bf16
// COPY: gpu.launch {{.*}} dynamic_shared_memory_size %c30720_i32 {
// COPY: nvgpu.device_async_copy %[[COPY]][%{{.*}}, %{{.*}}], %{{.*}}, 8, %{{.*}} {bypassL1} : memref<?x64xbf16> to memref<3x64x40xbf16, #gpu.address_space<workgroup>>
// COPY: gpu.terminator
// COPY: memref.dealloc %[[COPY]]
// COPY: } else {
// ASYNC-LABEL: func.func @project_bf16
// ASYNC: gpu.launch {{.*}} dynamic_shared_memory_size %c46080_i32 {
// ASYNC: %[[RA:.*]] = memref.view {{.*}} to memref<3x64x40xf32, #gpu.address_space<workgroup>>
// ASYNC: %[[RW:.*]] = memref.view {{.*}} to memref<3x64x40xbf16, #gpu.address_space<workgroup>>
// ASYNC: memref.load %{{.*}}[%{{.*}}] : memref<?xi32>
// ASYNC: nvgpu.device_async_copy %arg1[%{{.*}}, %{{.*}}], %[[RA]][%c0{{.*}}, %{{.*}}, %{{.*}}], 4, %{{.*}} {bypassL1} : memref<?x64xf32> to memref<3x64x40xf32, #gpu.address_space<workgroup>>
// ASYNC: nvgpu.device_async_copy %arg2[%{{.*}}, %{{.*}}, %{{.*}}], %[[RW]][%c0{{.*}}, %{{.*}}, %{{.*}}], 8, %{{.*}} {bypassL1} : memref<4x32x64xbf16> to memref<3x64x40xbf16, #gpu.address_space<workgroup>>
// ASYNC: scf.for
// ASYNC: nvvm.cp.async.wait.group 1
// ASYNC: nvvm.mma.sync
// ASYNC: nvvm.cp.async.wait.group 0
// REGS-LABEL: func.func @project_bf16
// REGS-NOT: nvgpu.device_async_copy
// REGS: gpu.launch {{.*}} workgroup(%{{.*}} : memref<8x72xi32, #gpu.address_space<workgroup>>
// REGS-NOT: nvgpu.device_async_copy
// REGS: nvvm.mma.sync
// REGS-NOT: nvgpu.device_async_copy
// REGS: return
// CHECK-LABEL: func.func @project_bf16
// CHECK: memref.extract_aligned_pointer_as_index %arg2 : memref<4x32x64xbf16> -> index
// CHECK: scf.if %{{.*}} -> (f32) {
// CHECK: vector.load %arg2[%{{.*}}, %{{.*}}, %{{.*}}] {alignment = 4 : i64} : memref<4x32x64xbf16>, vector<2xbf16>
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: } else {
// CHECK: memref.load %arg2[%{{.*}}, %{{.*}}, %{{.*}}] : memref<4x32x64xbf16>
#e = affine_map<(t, s, i, d) -> (t, s)>
#x = affine_map<(t, s, i, d) -> (t, d)>
#g = affine_map<(t, s, i, d) -> (t, s, i)>
func.func @project_bf16(%experts: memref<?x2xi32>, %x: memref<?x64xf32>, %w: memref<4x32x64xbf16>, %g: memref<?x2x32xf32>) {
  linalg.generic {indexing_maps = [#e, #x, #g], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%experts, %x : memref<?x2xi32>, memref<?x64xf32>) outs(%g : memref<?x2x32xf32>) attrs = {dsf.experts = "project"} {
  ^bb0(%e: i32, %a: f32, %acc: f32):
    %ei = arith.index_cast %e : i32 to index
    %i = linalg.index 2 : index
    %d = linalg.index 3 : index
    %wv = memref.load %w[%ei, %i, %d] : memref<4x32x64xbf16>
    %wf = arith.extf %wv : bf16 to f32
    %p = arith.mulf %wf, %a : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// 2,048 outputs an expert: the kernel's 128 x 128 tiles from 512 rows an
// expert on average (wide-min-rows-per-expert), 64 x 64 ones below (a
// batched decode's few rows an expert); the starts count each expert's
// tiles of 64 rows and of 128, as the blocks of each kernel take them.
// CHECK-LABEL: func.func @project_wide
// CHECK: %[[STARTS:.*]] = memref.alloc(%{{.*}}) : memref<3x?xi32>
// CHECK: scf.for
// CHECK: arith.addi %{{.*}}, %c63_i32
// CHECK: arith.divui %{{.*}}, %c64_i32
// CHECK: arith.addi %{{.*}}, %c127_i32
// CHECK: arith.divui %{{.*}}, %c128_i32
// CHECK: %[[WIDEROWS:.*]] = arith.muli %{{.*}}, %c512
// CHECK: %[[WIDE:.*]] = arith.cmpi uge, %{{.*}}, %[[WIDEROWS]]
// CHECK: scf.if %[[WIDE]] {
// CHECK: gpu.launch {{.*}} workgroup(%{{.*}} : memref<16x132xf32, #gpu.address_space<workgroup>>
// CHECK: memref.load %[[STARTS]][%c2
// CHECK: arith.muli %{{.*}}, %c128
// CHECK: } else {
// CHECK: gpu.launch {{.*}} workgroup(%{{.*}} : memref<16x68xf32, #gpu.address_space<workgroup>>
// CHECK: memref.load %[[STARTS]][%c1
// CHECK: arith.muli %{{.*}}, %c64
// wide-min-rows-per-expert=0: the 128 x 128 tiles at any rows, their
// starts alone.
// WIDE0-LABEL: func.func @project_wide
// WIDE0: memref.alloc(%{{.*}}) : memref<2x?xi32>
// WIDE0: gpu.launch {{.*}} workgroup(%{{.*}} : memref<16x132xf32, #gpu.address_space<workgroup>>
// WIDE0-NOT: memref<16x68xf32
// WIDE0: return
#e = affine_map<(t, s, i, d) -> (t, s)>
#x = affine_map<(t, s, i, d) -> (t, d)>
#g = affine_map<(t, s, i, d) -> (t, s, i)>
func.func @project_wide(%experts: memref<?x2xi32>, %x: memref<?x64xf32>, %w: memref<4x2048x64xf32>, %g: memref<?x2x2048xf32>) {
  linalg.generic {indexing_maps = [#e, #x, #g], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%experts, %x : memref<?x2xi32>, memref<?x64xf32>) outs(%g : memref<?x2x2048xf32>) attrs = {dsf.experts = "project"} {
  ^bb0(%e: i32, %a: f32, %acc: f32):
    %ei = arith.index_cast %e : i32 to index
    %i = linalg.index 2 : index
    %d = linalg.index 3 : index
    %wv = memref.load %w[%ei, %i, %d] : memref<4x2048x64xf32>
    %p = arith.mulf %wv, %a : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// The experts' SwiGLU: both projections' outputs zeroed just before (the
// fills go: every (token, slot) row is stored once, its sum without
// reading the output), the second followed by h = silu(g1) * g3 * weight,
// which both kernels (tiles and warps) compute where they store g3's
// element; the down product's output zeroed too: its slots added from 0.
// No generic and no fill of a float output is left.
// CHECK-LABEL: func.func @swiglu
// CHECK-NOT: linalg.fill ins(%{{.*}} : f32)
// CHECK: %[[H:.*]] = memref.alloc(%{{.*}}) : memref<?x2x32xf32>
// CHECK: scf.if
// CHECK: gpu.launch
// CHECK: memref.store %[[SUM:.*]], %arg4[%[[T:.*]], %[[S:.*]], %[[C:.*]]] : memref<?x2x32xf32>
// CHECK: memref.load %arg3
// CHECK: memref.load %arg5
// CHECK: math.exp
// CHECK: arith.mulf %{{.*}}, %[[SUM]] : f32
// CHECK: memref.store %{{.*}}, %[[H]][%[[T]], %[[S]], %[[C]]] : memref<?x2x32xf32>
// CHECK: } else {
// CHECK: gpu.launch
// CHECK-NOT: memref.load %arg4
// CHECK: memref.store %{{.*}}, %[[H]]
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c2{{.*}} step %c1{{.*}} iter_args(%{{.*}} = %cst{{.*}}) -> (f32)
// CHECK-NOT: linalg.generic
// CHECK-NOT: linalg.fill ins(%{{.*}} : f32)
// CHECK: return
#e = affine_map<(t, s, i, d) -> (t, s)>
#x = affine_map<(t, s, i, d) -> (t, d)>
#g = affine_map<(t, s, i, d) -> (t, s, i)>
#id = affine_map<(t, s, i) -> (t, s, i)>
#ts = affine_map<(t, s, i) -> (t, s)>
#de = affine_map<(t, n, s, i) -> (t, s)>
#dh = affine_map<(t, n, s, i) -> (t, s, i)>
#dy = affine_map<(t, n, s, i) -> (t, n)>
func.func @swiglu(%experts: memref<?x2xi32>, %x: memref<?x64xf32>, %w3: memref<4x32x64xf32>, %g1: memref<?x2x32xf32>,
                  %g3: memref<?x2x32xf32>, %weights: memref<?x2xf32>, %w2: memref<4x64x32xf32>, %y: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %t = memref.dim %x, %c0 : memref<?x64xf32>
  linalg.fill ins(%zero : f32) outs(%g3 : memref<?x2x32xf32>)
  linalg.generic {indexing_maps = [#e, #x, #g], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%experts, %x : memref<?x2xi32>, memref<?x64xf32>) outs(%g3 : memref<?x2x32xf32>) attrs = {dsf.experts = "project"} {
  ^bb0(%e: i32, %a: f32, %acc: f32):
    %ei = arith.index_cast %e : i32 to index
    %i = linalg.index 2 : index
    %d = linalg.index 3 : index
    %wv = memref.load %w3[%ei, %i, %d] : memref<4x32x64xf32>
    %p = arith.mulf %wv, %a : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  %h = memref.alloc(%t) : memref<?x2x32xf32>
  linalg.generic {indexing_maps = [#id, #id, #ts, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%g1, %g3, %weights : memref<?x2x32xf32>, memref<?x2x32xf32>, memref<?x2xf32>) outs(%h : memref<?x2x32xf32>) {
  ^bb0(%a: f32, %b: f32, %wt: f32, %o: f32):
    %one = arith.constant 1.0 : f32
    %n = arith.negf %a : f32
    %ex = math.exp %n : f32
    %den = arith.addf %one, %ex : f32
    %silu = arith.divf %a, %den : f32
    %m = arith.mulf %silu, %b : f32
    %r = arith.mulf %m, %wt : f32
    linalg.yield %r : f32
  }
  linalg.fill ins(%zero : f32) outs(%y : memref<?x64xf32>)
  linalg.generic {indexing_maps = [#de, #dh, #dy], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%experts, %h : memref<?x2xi32>, memref<?x2x32xf32>) outs(%y : memref<?x64xf32>) attrs = {dsf.experts = "down"} {
  ^bb0(%e: i32, %a: f32, %acc: f32):
    %ei = arith.index_cast %e : i32 to index
    %n = linalg.index 1 : index
    %i = linalg.index 3 : index
    %wv = memref.load %w2[%ei, %n, %i] : memref<4x64x32xf32>
    %p = arith.mulf %wv, %a : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  memref.dealloc %h : memref<?x2x32xf32>
  return
}

// -----

// An MXFP4 weight bound packed (dsf-to-linalg's weight-storage=released):
// the codes [4, 32, 32] (two a byte) and their UE8M0 scales [4, 32, 2].
// The warp kernel reads eight codes a lane a 32-bit load, their block's
// scale and their activations 16 bytes a load (one depth a load when the
// codes' base is not 4-byte aligned or the activations' not 16-byte),
// moves its codes into f16x2s' bits, depths n and n + 4 of a 32-bit word
// by one mask and shift of it (0x70007 << 9, sign 0x80008 << 12: E2M1
// x 2^-14, exact),
// adds the run's products and scales their sum once (2^14, then the
// block's scale); the register-staged tiles decode each depth as they
// stage it. With cp.async (ASYNC) the tiles copy a stage's codes as stored
// (16 bytes a row: 32 depths, one block of scales; 64 copies, one each for
// the first 64 threads) and decode them in shared memory, 8 depths a thread
// (a 32-bit load of the ring, four masks and shifts, x 2^14 x the scale),
// into a bf16 stage the mma fragments read.
// CHECK-LABEL: func.func @project_packed
// CHECK: gpu.launch
// CHECK: memref.load %arg2
// CHECK: memref.load %arg3
// CHECK: gpu.barrier
// CHECK: } else {
// CHECK: memref.extract_aligned_pointer_as_index %arg2 : memref<4x32x32xi8> -> index
// CHECK: arith.remui %intptr, %c4
// CHECK: memref.extract_aligned_pointer_as_index %arg1 : memref<?x64xf32> -> index
// CHECK: scf.if %{{.*}} -> (f32) {
// CHECK: vector.load %arg1[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x64xf32>, vector<4xf32>
// CHECK: vector.load %arg2[%{{.*}}, %{{.*}}, %{{.*}}] {alignment = 4 : i64} : memref<4x32x32xi8>, vector<4xi8>
// CHECK: memref.load %arg3[%{{.*}}, %{{.*}}, %{{.*}}] : memref<4x32x2xi8>
// CHECK: vector.bitcast %{{.*}} : vector<4xi8> to vector<1xi32>
// CHECK: %[[WORD:.*]] = vector.extract %{{.*}}[0] : i32 from vector<1xi32>
// CHECK: arith.andi %[[WORD]], %c458759_i32
// CHECK: arith.shli %{{.*}}, %c9_i32
// CHECK: arith.andi %[[WORD]], %c524296_i32
// CHECK: arith.shli %{{.*}}, %c12_i32
// CHECK: vector.bitcast %{{.*}} : vector<1xi32> to vector<2xf16>
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK: arith.constant 1.638400e+04 : f32
// CHECK: } else {
// CHECK: memref.load %arg2[%{{.*}}, %{{.*}}, %{{.*}}] : memref<4x32x32xi8>
// ASYNC-LABEL: func.func @project_packed
// ASYNC: %[[CODES:.*]] = memref.view %{{.*}}[%c30720][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<3x64x16xi8, #gpu.address_space<workgroup>>
// ASYNC: %[[DECODED:.*]] = memref.view %{{.*}}[%c33792][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<1x64x40xbf16, #gpu.address_space<workgroup>>
// ASYNC: %[[ACTIVE:.*]] = arith.cmpi ult, %{{.*}}, %c64{{.*}} : index
// ASYNC: %[[BYTE:.*]] = arith.divui %{{.*}}, %c2{{.*}} : index
// ASYNC: %[[AT:.*]] = arith.select %{{.*}}, %[[BYTE]], %c0{{.*}} : index
// ASYNC-NEXT: scf.if %[[ACTIVE]] {
// ASYNC-NEXT: nvgpu.device_async_copy %arg2[%{{.*}}, %{{.*}}, %[[AT]]], %[[CODES]][%{{.*}}, %{{.*}}, %{{.*}}], 16, %{{.*}} {bypassL1} : memref<4x32x32xi8> to memref<3x64x16xi8, #gpu.address_space<workgroup>>
// ASYNC: scf.for
// ASYNC: memref.load %arg3[%{{.*}}, %{{.*}}, %{{.*}}] : memref<4x32x2xi8>
// ASYNC: nvvm.cp.async.wait.group 1
// ASYNC: vector.load %[[CODES]][%{{.*}}, %{{.*}}, %{{.*}}] {alignment = 4 : i64} : memref<3x64x16xi8, #gpu.address_space<workgroup>>, vector<4xi8>
// ASYNC: arith.constant 1.638400e+04 : f32
// ASYNC: arith.truncf %{{.*}} : vector<8xf32> to vector<8xbf16>
// ASYNC: vector.store %{{.*}}, %[[DECODED]]
// ASYNC-NEXT: gpu.barrier
// ASYNC: nvvm.mma.sync
// ASYNC: return
#e = affine_map<(t, s, i, d) -> (t, s)>
#x = affine_map<(t, s, i, d) -> (t, d)>
#g = affine_map<(t, s, i, d) -> (t, s, i)>
func.func @project_packed(%experts: memref<?x2xi32>, %x: memref<?x64xf32>, %codes: memref<4x32x32xi8>,
                          %scales: memref<4x32x2xi8>, %g: memref<?x2x32xf32>) {
  linalg.generic {indexing_maps = [#e, #x, #g], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%experts, %x : memref<?x2xi32>, memref<?x64xf32>) outs(%g : memref<?x2x32xf32>) attrs = {dsf.experts = "project"} {
  ^bb0(%e: i32, %a: f32, %acc: f32):
    %ei = arith.index_cast %e : i32 to index
    %i = linalg.index 2 : index
    %d = linalg.index 3 : index
    %c2 = arith.constant 2 : index
    %c32 = arith.constant 32 : index
    %byteAt = arith.divui %d, %c2 : index
    %blockAt = arith.divui %d, %c32 : index
    %byte = memref.load %codes[%ei, %i, %byteAt] : memref<4x32x32xi8>
    %scale = memref.load %scales[%ei, %i, %blockAt] : memref<4x32x2xi8>
    %b = arith.extui %byte : i8 to i32
    %s = arith.extui %scale : i8 to i32
    %sum = arith.addi %b, %s : i32
    %v = arith.uitofp %sum : i32 to f32
    %p = arith.mulf %v, %a : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  }
  return
}
