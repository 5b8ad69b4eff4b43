// RUN: dsf-opt %s --dsf-gpu-sink-attention --split-input-file -verify-diagnostics | FileCheck %s
// RUN: dsf-opt %s --dsf-gpu-sink-attention=batch-invariant=true --split-input-file -verify-diagnostics | FileCheck %s --check-prefix=INVARIANT
// RUN: dsf-opt %s --dsf-gpu-sink-attention="mma-min-tokens=16" --split-input-file -verify-diagnostics | FileCheck %s --check-prefix=MMA
// RUN: dsf-opt %s --dsf-gpu-sink-attention=mma-min-tokens=0 --split-input-file -verify-diagnostics | FileCheck %s --check-prefix=MMAOFF
// RUN: dsf-opt %s --dsf-gpu-sink-attention="mma-min-tokens=64" --split-input-file -verify-diagnostics | FileCheck %s --check-prefix=MMA64
// RUN: dsf-opt %s --dsf-gpu-sink-attention="mma-min-tokens=16 batch-invariant=true" --split-input-file -verify-diagnostics | FileCheck %s --check-prefix=MMAINVARIANT
// RUN: dsf-opt %s --dsf-gpu-sink-attention="mma-min-batch=8" --split-input-file -verify-diagnostics | FileCheck %s --check-prefix=BATCHMMA
// RUN: dsf-opt %s --dsf-gpu-sink-attention="mma-min-tokens=1 split-below-blocks=132" --split-input-file -verify-diagnostics | FileCheck %s --check-prefix=SPLIT
// RUN: dsf-opt %s --dsf-gpu-sink-attention="mma-min-batch=8 batch-invariant=true" --split-input-file -verify-diagnostics | FileCheck %s --check-prefix=BATCHINVARIANT

// Sink attention over a band of 4 window rows and 8 selected entries becomes
// one kernel, a block per (token, head) — 512 threads below 1,024 blocks (a
// decode's few tokens), else 256 (a prefill's): the query into shared
// memory, each warp two columns' logits at a time (both rows' loads before
// the products, xor shuffles, times the scale; -inf where there is no row;
// the entries' under entries > 0, else -inf), the maximum with the sink, the
// exps in place and the denominator, then each thread's channels summed over
// the band's rows and the entries' rows, four (band) and eight (entries)
// loads together.
// CHECK-LABEL: func.func private @dsf_attention_h2_d64_w4_k8_s3e000000
// CHECK: %[[T:.*]] = memref.dim %arg0, %c0
// CHECK: %[[ROWS:.*]] = memref.dim %arg1
// CHECK: %[[ENTRIES:.*]] = memref.dim %arg2
// CHECK: %[[OFF:.*]] = arith.subi %[[ROWS]], %[[T]]
// CHECK: %[[OUT:.*]] = memref.alloc(%[[T]]) : memref<?x2x64xf32>
// CHECK: %[[BLOCKS:.*]] = arith.muli %[[T]], %c2
// CHECK: %[[FEW:.*]] = arith.cmpi ult, %[[BLOCKS]], %c1024
// CHECK: scf.if %[[FEW]] {
// CHECK: gpu.launch blocks(%[[TOK:.*]], %[[HEAD:.*]], %{{.*}}) in (%{{.*}} = %[[T]], %{{.*}} = %c2{{(_[0-9]+)?}}, {{.*}} threads(%[[TID:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c512
// CHECK-SAME: workgroup(%[[Q:.*]] : memref<64xf32, #gpu.address_space<workgroup>>, %[[P:.*]] : memref<12xf32, #gpu.address_space<workgroup>>, %[[MAX:.*]] : memref<16xf32, #gpu.address_space<workgroup>>, %[[SUM:.*]] : memref<16xf32, #gpu.address_space<workgroup>>)
// CHECK: memref.load %arg0[%[[TOK]], %[[HEAD]], %{{.*}}]
// CHECK: memref.store %{{.*}}, %[[Q]]
// CHECK: gpu.barrier
// The band: window row off + t + c - 3 when that is >= 0, two columns 16 apart.
// CHECK: %[[SELF:.*]] = arith.addi %[[OFF]], %[[TOK]]
// CHECK: scf.for %{{.*}} = %{{.*}} to %c4{{.*}} step %c32
// CHECK: arith.cmpi uge
// CHECK-COUNT-2: memref.load %arg1
// CHECK-COUNT-2: memref.load %arg1
// CHECK-COUNT-10: gpu.shuffle  xor
// CHECK: memref.store %{{.*}}, %[[P]]
// CHECK: memref.store %{{.*}}, %[[P]]
// The entries: selection[t, s], -1 for none.
// CHECK: %[[ANY:.*]] = arith.cmpi ugt, %[[ENTRIES]], %c0
// CHECK: scf.if %[[ANY]] {
// CHECK: memref.load %arg3[%[[TOK]], %{{.*}}] : memref<?x8xi32>
// CHECK: arith.cmpi sge
// CHECK-COUNT-2: memref.load %arg2
// CHECK-COUNT-10: gpu.shuffle  xor
// CHECK: } else {
// CHECK: memref.store %cst, %[[P]]
// CHECK: gpu.barrier
// CHECK: memref.load %arg4[%[[HEAD]]]
// CHECK: arith.maximumf
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK: memref.store %{{.*}}, %[[MAX]]
// CHECK: gpu.barrier
// CHECK: math.exp
// CHECK: memref.store %{{.*}}, %[[P]]
// CHECK: math.exp
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK: memref.store %{{.*}}, %[[SUM]]
// CHECK: gpu.barrier
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c4{{.*}} step %c4
// CHECK-COUNT-4: memref.load %arg1
// CHECK: scf.if %[[ANY]] -> (f32)
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c8{{.*}} step %c8
// CHECK-COUNT-8: memref.load %arg2
// CHECK: memref.store %{{.*}}, %[[OUT]][%[[TOK]], %[[HEAD]], %{{.*}}]
// CHECK: gpu.terminator
// The prefill's kernel: the same with 256 threads (8 warps' maxima and sums).
// CHECK: } else {
// CHECK: gpu.launch {{.*}} threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c256
// CHECK-SAME: memref<12xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<8xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<8xf32, #gpu.address_space<workgroup>>)
// CHECK: gpu.terminator
// CHECK: return %[[OUT]]
// Batch-invariant: the 512-thread kernel for any number of tokens.
// INVARIANT-LABEL: func.func private @dsf_attention_h2_d64_w4_k8_s3e000000
// INVARIANT-NOT: scf.if
// INVARIANT: gpu.launch {{.*}} threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c512
// INVARIANT-NOT: gpu.launch
// INVARIANT: return
// With mma-min-tokens a width of 64 (not a multiple of 128) keeps the SIMT
// kernels.
// MMA-LABEL: func.func private @dsf_attention_h2_d64_w4_k8_s3e000000
// MMA-NOT: nvgpu
// MMA: return
func.func private @dsf_attention_h2_d64_w4_k8_s3e000000(%q: memref<?x2x64xf32>, %win: memref<?x64xf32>,
                                                       %cache: memref<?x64xf32>, %sel: memref<?x8xi32>,
                                                       %sink: memref<2xf32>) -> memref<?x2x64xf32>
    attributes {dsf.attention = {heads = 2 : i64, width = 64 : i64, window = 4 : i64, k = 8 : i64, scale = 0.125 : f32}} {
  %c0 = arith.constant 0 : index
  %t = memref.dim %q, %c0 : memref<?x2x64xf32>
  %o = memref.alloc(%t) : memref<?x2x64xf32>
  return %o : memref<?x2x64xf32>
}

// -----

// Window only (k = 0, a sliding layer); 640 channels: two a thread, the
// second for threads below 128.
// CHECK-LABEL: func.func private @dsf_attention_h1_d640_w3_k0_s3f800000
// CHECK: gpu.launch
// CHECK-NOT: memref<?x{{[0-9]+}}xi32>
// CHECK-COUNT-2: arith.cmpi ult
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c3{{.*}} step %c1
// CHECK-COUNT-2: memref.load %arg1
// CHECK-COUNT-2: memref.store
// CHECK: gpu.terminator
func.func private @dsf_attention_h1_d640_w3_k0_s3f800000(%q: memref<?x1x640xf32>, %win: memref<?x640xf32>,
                                                        %sink: memref<1xf32>) -> memref<?x1x640xf32>
    attributes {dsf.attention = {heads = 1 : i64, width = 640 : i64, window = 3 : i64, k = 0 : i64, scale = 1.0 : f32}} {
  %c0 = arith.constant 0 : index
  %t = memref.dim %q, %c0 : memref<?x1x640xf32>
  %o = memref.alloc(%t) : memref<?x1x640xf32>
  return %o : memref<?x1x640xf32>
}

// -----

// With mma-min-tokens N >= 1 (0, the default: never; dsf-compile's bf16
// builds give 16) and a width the tensor-core kernel takes (a multiple of
// 128), a call of N tokens or more (a prefill) runs on it and
// fewer tokens (a decode) keep the SIMT kernels. First the window's and the
// cache's rows in bf16 in one buffer (a kernel, four channels a thread);
// then a block of 256 threads per (token, group of 16 heads) with dynamic
// shared memory: the first chunk's rows by cp.async (zero-filled where a
// column is no row), the queries in bf16, the running maxima from the sink;
// per chunk of 64 columns the wait for its rows, the next chunk's copies,
// S = Q K^T and P V on mma.sync m16n8k16 bf16 with ldmatrix fragments (.trans
// for V), quad shuffles for the rows' maxima. The buffer is freed after.
// CHECK-LABEL: func.func private @dsf_attention_h4_d128_w16_k8_s3e000000
// CHECK-NOT: nvgpu
// CHECK: return
// MMA-LABEL: func.func private @dsf_attention_h4_d128_w16_k8_s3e000000
// MMA: %[[T:.*]] = memref.dim %arg0, %c0
// MMA: %[[ROWS:.*]] = memref.dim %arg1
// MMA: %[[ENTRIES:.*]] = memref.dim %arg2
// MMA: %[[MANY:.*]] = arith.cmpi uge, %[[T]], %c16
// MMA: scf.if %[[MANY]] {
// MMA: %[[KVROWS:.*]] = arith.addi %[[ROWS]], %[[ENTRIES]]
// MMA: %[[KV:.*]] = memref.alloc(%[[KVROWS]]) : memref<?x128xbf16>
// MMA: gpu.launch
// MMA: vector.load %arg1{{.*}} : memref<?x128xf32>, vector<4xf32>
// MMA: vector.load %arg2{{.*}} : memref<?x128xf32>, vector<4xf32>
// MMA: arith.truncf %{{.*}} : vector<4xf32> to vector<4xbf16>
// MMA: vector.store %{{.*}}, %[[KV]]
// MMA: gpu.terminator
// MMA: gpu.launch blocks(%[[TOK:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[T]], %{{.*}} = %c1{{(_[0-9]+)?}}, {{.*}} threads({{.*}}) in (%{{.*}} = %c256{{.*}} dynamic_shared_memory_size
// MMA: gpu.dynamic_shared_memory
// MMA: memref.load %arg3[%[[TOK]], %{{.*}}] : memref<?x8xi32>
// MMA-COUNT-4: nvgpu.device_async_copy %[[KV]]
// MMA: nvvm.cp.async.commit.group
// MMA: arith.truncf %{{.*}} : vector<4xf32> to vector<4xbf16>
// MMA: memref.load %arg4
// MMA: scf.for
// MMA: nvvm.cp.async.wait.group 0
// MMA: gpu.barrier
// MMA: nvgpu.device_async_copy %[[KV]]
// MMA: scf.for
// MMA: nvgpu.ldmatrix {{.*}} {numTiles = 2 : i32, transpose = false}
// MMA: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = false}
// MMA: nvvm.mma.sync {{.*}} {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>}
// MMA: gpu.shuffle  xor
// MMA: gpu.barrier
// MMA: math.exp
// MMA: arith.truncf %{{.*}} : vector<2xf32> to vector<2xbf16>
// MMA: gpu.barrier
// MMA: nvgpu.ldmatrix {{.*}} {numTiles = 4 : i32, transpose = true}
// MMA: nvvm.mma.sync
// MMA: scf.yield
// MMA: gpu.barrier
// MMA: arith.divf
// MMA: vector.store %{{.*}}, %{{.*}}[%[[TOK]], %{{.*}}, %{{.*}}] {alignment = 8 : i64} : memref<?x4x128xf32>, vector<2xf32>
// MMA: gpu.terminator
// MMA: memref.dealloc %[[KV]]
// MMA: } else {
// MMA-NOT: nvgpu
// MMA: gpu.launch
// MMA: return
// MMA64: %[[T:.*]] = memref.dim %arg0, %c0
// MMA64: arith.cmpi uge, %[[T]], %c64
// Without a threshold (the default) and in a batch-invariant build the SIMT
// kernels run for any number of tokens.
// MMAOFF-LABEL: func.func private @dsf_attention_h4_d128_w16_k8_s3e000000
// MMAOFF-NOT: nvgpu
// MMAOFF: return
// MMAINVARIANT-LABEL: func.func private @dsf_attention_h4_d128_w16_k8_s3e000000
// MMAINVARIANT-NOT: nvgpu
// MMAINVARIANT: return
func.func private @dsf_attention_h4_d128_w16_k8_s3e000000(%q: memref<?x4x128xf32>, %win: memref<?x128xf32>,
                                                         %cache: memref<?x128xf32>, %sel: memref<?x8xi32>,
                                                         %sink: memref<4xf32>) -> memref<?x4x128xf32>
    attributes {dsf.attention = {heads = 4 : i64, width = 128 : i64, window = 16 : i64, k = 8 : i64, scale = 0.125 : f32}} {
  %c0 = arith.constant 0 : index
  %t = memref.dim %q, %c0 : memref<?x4x128xf32>
  %o = memref.alloc(%t) : memref<?x4x128xf32>
  return %o : memref<?x4x128xf32>
}

// -----

// split-below-blocks: 64 band columns and 64 entries are two chunks of 64,
// so a call of fewer than 132 blocks (tokens x one group of 16 heads) splits
// them into parts: the parts chosen on the host from the tokens, the grid's
// third dimension the part, a block its chunks [part x per, min(+ per, 2)),
// its running maximum from the sink at the first chunk's slot; one part
// stores O / denominator as before, several their O, maximum and sum (no
// sink), merged by a third kernel when there are several. One chunk of
// columns (the case above) builds the kernel without parts.
// SPLIT-LABEL: func.func private @dsf_attention_h4_d128_w16_k8_s3e000000
// SPLIT-NOT: memref<?xf32>
// SPLIT: return
// SPLIT-LABEL: func.func private @dsf_attention_h4_d128_w64_k64_s3e000000
// SPLIT: %[[T:.*]] = memref.dim %arg0, %c0
// SPLIT: scf.if
// SPLIT: gpu.launch
// SPLIT: %[[BLOCKS:.*]] = arith.maxui %{{.*}}, %c1
// SPLIT: %[[WANTED:.*]] = arith.divui %{{.*}}, %[[BLOCKS]]
// SPLIT: %[[MOST:.*]] = arith.minui %[[WANTED]], %c2
// SPLIT: %[[PER:.*]] = arith.divui %{{.*}}, %[[MOST]]
// SPLIT: %[[PARTS:.*]] = arith.divui %{{.*}}, %[[PER]]
// SPLIT: %[[SEVERAL:.*]] = arith.cmpi ugt, %[[PARTS]], %c1
// SPLIT: %[[PROWS:.*]] = arith.select %[[SEVERAL]]
// SPLIT: %[[POUT:.*]] = memref.alloc(%[[PROWS]]) : memref<?x128xf32>
// SPLIT: %[[PMAX:.*]] = memref.alloc(%[[PROWS]]) : memref<?xf32>
// SPLIT: %[[PSUM:.*]] = memref.alloc(%[[PROWS]]) : memref<?xf32>
// SPLIT: gpu.launch blocks(%{{.*}}, %{{.*}}, %[[PART:.*]]) in (%{{.*}} = %[[T]], %{{.*}} = %c1{{(_[0-9]+)?}}, %{{.*}} = %[[PARTS]])
// SPLIT: %[[FIRST:.*]] = arith.muli %[[PART]], %[[PER]]
// SPLIT: %[[END:.*]] = arith.minui %{{.*}}, %c2
// SPLIT: scf.for %{{.*}} = %[[FIRST]] to %[[END]]
// SPLIT: %[[ONE:.*]] = arith.cmpi eq, %[[PARTS]], %c1
// SPLIT: scf.if %[[ONE]] {
// SPLIT: arith.divf
// SPLIT: vector.store %{{.*}}, %{{.*}} : memref<?x4x128xf32>, vector<2xf32>
// SPLIT: } else {
// SPLIT: memref.store %{{.*}}, %[[PMAX]]
// SPLIT: memref.store %{{.*}}, %[[PSUM]]
// SPLIT-NOT: arith.divf
// SPLIT: vector.store %{{.*}}, %[[POUT]]
// SPLIT: gpu.terminator
// SPLIT: scf.if %[[SEVERAL]] {
// SPLIT: gpu.launch
// SPLIT: scf.for
// SPLIT: memref.load %[[PMAX]]
// SPLIT: arith.maximumf
// SPLIT: scf.for
// SPLIT: memref.load %[[PSUM]]
// SPLIT: vector.load %[[POUT]]
// SPLIT: arith.divf %{{.*}} : vector<4xf32>
// SPLIT: vector.store %{{.*}} : memref<?x4x128xf32>, vector<4xf32>
// SPLIT: memref.dealloc %[[POUT]]
func.func private @dsf_attention_h4_d128_w64_k64_s3e000000(%q: memref<?x4x128xf32>, %win: memref<?x128xf32>,
                                                          %cache: memref<?x128xf32>, %sel: memref<?x64xi32>,
                                                          %sink: memref<4xf32>) -> memref<?x4x128xf32>
    attributes {dsf.attention = {heads = 4 : i64, width = 128 : i64, window = 64 : i64, k = 64 : i64, scale = 0.125 : f32}} {
  %c0 = arith.constant 0 : index
  %t = memref.dim %q, %c0 : memref<?x4x128xf32>
  %o = memref.alloc(%t) : memref<?x4x128xf32>
  return %o : memref<?x4x128xf32>
}

// -----

// A width that is not a multiple of 32 keeps its linalg body.
// CHECK-LABEL: func.func private @dsf_attention_h1_d40_w2_k0_s3f800000
// CHECK-NOT: gpu.launch
// CHECK: memref.alloc
func.func private @dsf_attention_h1_d40_w2_k0_s3f800000(%q: memref<?x1x40xf32>, %win: memref<?x40xf32>,
                                                       %sink: memref<1xf32>) -> memref<?x1x40xf32>
    attributes {dsf.attention = {heads = 1 : i64, width = 40 : i64, window = 2 : i64, k = 0 : i64, scale = 1.0 : f32}} {
  %c0 = arith.constant 0 : index
  %t = memref.dim %q, %c0 : memref<?x1x40xf32>
  %o = memref.alloc(%t) : memref<?x1x40xf32>
  return %o : memref<?x1x40xf32>
}

// -----

// The attribute's k is not the selection's.
// expected-error @below {{dsf-gpu-sink-attention: a dsf.attention helper that is not the bufferized (queries, window, [cache, selection], sink) -> output of its heads, width and k}}
func.func private @dsf_attention_wrong_k(%q: memref<?x2x64xf32>, %win: memref<?x64xf32>, %cache: memref<?x64xf32>,
                                         %sel: memref<?x8xi32>, %sink: memref<2xf32>) -> memref<?x2x64xf32>
    attributes {dsf.attention = {heads = 2 : i64, width = 64 : i64, window = 4 : i64, k = 16 : i64, scale = 0.125 : f32}} {
  %c0 = arith.constant 0 : index
  %t = memref.dim %q, %c0 : memref<?x2x64xf32>
  %o = memref.alloc(%t) : memref<?x2x64xf32>
  return %o : memref<?x2x64xf32>
}

// -----

// Not bufferized.
// expected-error @below {{dsf-gpu-sink-attention: a dsf.attention helper that is not the bufferized}}
func.func private @dsf_attention_tensors(%q: tensor<?x1x64xf32>, %win: tensor<?x64xf32>, %sink: tensor<1xf32>)
    -> tensor<?x1x64xf32>
    attributes {dsf.attention = {heads = 1 : i64, width = 64 : i64, window = 2 : i64, k = 0 : i64, scale = 1.0 : f32}} {
  return %q : tensor<?x1x64xf32>
}

// -----

// A field is missing.
// expected-error @below {{dsf-gpu-sink-attention: a dsf.attention helper that is not the bufferized}}
func.func private @dsf_attention_no_scale(%q: memref<?x1x64xf32>, %win: memref<?x64xf32>, %sink: memref<1xf32>)
    -> memref<?x1x64xf32>
    attributes {dsf.attention = {heads = 1 : i64, width = 64 : i64, window = 2 : i64, k = 0 : i64}} {
  %c0 = arith.constant 0 : index
  %t = memref.dim %q, %c0 : memref<?x1x64xf32>
  %o = memref.alloc(%t) : memref<?x1x64xf32>
  return %o : memref<?x1x64xf32>
}

// -----

// A batched step's helper (dsf.slot_attention): the same kernel over the
// rings and pages. The token's own ring row is t W + p mod W, its band's
// column c position p - 3 + c at row t W + that mod W (the own row before
// the sequence), entry e of the selection page table[t, e div 16], row
// e mod 16 of it.
// CHECK-LABEL: func.func private @dsf_attention_slots_h2_d64_w4_k8_s3e000000_e16
// CHECK: gpu.launch blocks(%[[STOK:[a-z0-9]+]], %{{[a-z0-9]+}}, %{{[a-z0-9]+}}) in
// CHECK: %[[P:.*]] = memref.load %arg2[%[[STOK]]] : memref<?xi32>
// CHECK: %[[PI:.*]] = arith.index_cast %[[P]]
// CHECK: %[[BASE:.*]] = arith.muli %[[STOK]], %c4{{(_[0-9]+)?}} :
// CHECK: %[[OWN:.*]] = arith.remui %[[PI]], %c4{{(_[0-9]+)?}} :
// CHECK: %[[SELFROW:.*]] = arith.addi %[[BASE]], %[[OWN]]
// CHECK: arith.addi %[[PI]]
// CHECK: arith.remui %{{.*}}, %c4{{(_[0-9]+)?}} :
// CHECK: arith.select %{{.*}}, %{{.*}}, %[[SELFROW]]
// CHECK: memref.load %arg1
// CHECK: memref.load %arg5[%[[STOK]], %{{.*}}] : memref<?x8xi32>
// CHECK: arith.divui %{{.*}}, %c16{{(_[0-9]+)?}} :
// CHECK: memref.load %arg4[%[[STOK]], %{{.*}}] : memref<?x?xi32>
// CHECK: arith.muli %{{.*}}, %c16{{(_[0-9]+)?}} :
// CHECK: arith.remui %{{.*}}, %c16{{(_[0-9]+)?}} :
// CHECK: memref.load %arg3
func.func private @dsf_attention_slots_h2_d64_w4_k8_s3e000000_e16(%q: memref<?x2x64xf32>, %rings: memref<?x64xf32>,
    %pos: memref<?xi32>, %pages: memref<?x64xf32>, %table: memref<?x?xi32>, %sel: memref<?x8xi32>,
    %sink: memref<2xf32>) -> memref<?x2x64xf32>
    attributes {dsf.slot_attention = {heads = 2 : i64, width = 64 : i64, window = 4 : i64, k = 8 : i64, scale = 0.125 : f32, page_entries = 16 : i64}} {
  %c0 = arith.constant 0 : index
  %t = memref.dim %q, %c0 : memref<?x2x64xf32>
  %o = memref.alloc(%t) : memref<?x2x64xf32>
  return %o : memref<?x2x64xf32>
}

// -----

// A slot helper whose page table is missing.
// expected-error @below {{dsf-gpu-sink-attention: a dsf.slot_attention helper that is not the bufferized (queries, rings, positions, [pages, page table, selection], sink) -> output of its heads, width, k and page entries}}
func.func private @dsf_attention_slots_no_table(%q: memref<?x2x64xf32>, %rings: memref<?x64xf32>, %pos: memref<?xi32>,
    %pages: memref<?x64xf32>, %sel: memref<?x8xi32>, %sink: memref<2xf32>) -> memref<?x2x64xf32>
    attributes {dsf.slot_attention = {heads = 2 : i64, width = 64 : i64, window = 4 : i64, k = 8 : i64, scale = 0.125 : f32, page_entries = 16 : i64}} {
  %c0 = arith.constant 0 : index
  %t = memref.dim %q, %c0 : memref<?x2x64xf32>
  %o = memref.alloc(%t) : memref<?x2x64xf32>
  return %o : memref<?x2x64xf32>
}

// -----

// Packed pages (packed = "nvfp4"): each entry is 32 code bytes and 4 E4M3
// scale bytes (width 64, blocks of 16), decoded as the kernel loads it: the
// code values from a table in shared memory (256 E4M3, then 16 E2M1),
// filled by the block before its first barrier.
// CHECK-LABEL: func.func private @dsf_attention_slots_h2_d64_w4_k8_s3e000000_e16_nvfp4
// CHECK: gpu.launch
// CHECK-SAME: workgroup({{.*}}, %[[TABLE:.*]] : memref<272xf32, #gpu.address_space<workgroup>>)
// CHECK: memref.store %{{.*}}, %[[TABLE]]
// CHECK: gpu.barrier
// CHECK: %[[CODE:.*]] = memref.load %arg3[%{{.*}}, %{{.*}}] : memref<?x36xi8>
// CHECK: arith.extui %[[CODE]] : i8 to i32
// CHECK: memref.load %[[TABLE]]
// CHECK: memref.load %arg3[%{{.*}}, %{{.*}}] : memref<?x36xi8>
// CHECK: memref.load %[[TABLE]]
// CHECK: arith.mulf
func.func private @dsf_attention_slots_h2_d64_w4_k8_s3e000000_e16_nvfp4(%q: memref<?x2x64xf32>, %rings: memref<?x64xf32>,
    %pos: memref<?xi32>, %pages: memref<?x36xi8>, %table: memref<?x?xi32>, %sel: memref<?x8xi32>,
    %sink: memref<2xf32>) -> memref<?x2x64xf32>
    attributes {dsf.slot_attention = {heads = 2 : i64, width = 64 : i64, window = 4 : i64, k = 8 : i64, scale = 0.125 : f32, page_entries = 16 : i64, packed = "nvfp4"}} {
  %c0 = arith.constant 0 : index
  %t = memref.dim %q, %c0 : memref<?x2x64xf32>
  %o = memref.alloc(%t) : memref<?x2x64xf32>
  return %o : memref<?x2x64xf32>
}

// -----

// Packed pages whose rows are not the format's (f32 rows, or an unknown format).
// expected-error @below {{dsf-gpu-sink-attention: a dsf.slot_attention helper that is not the bufferized}}
func.func private @dsf_attention_slots_packed_f32_rows(%q: memref<?x2x64xf32>, %rings: memref<?x64xf32>,
    %pos: memref<?xi32>, %pages: memref<?x64xf32>, %table: memref<?x?xi32>, %sel: memref<?x8xi32>,
    %sink: memref<2xf32>) -> memref<?x2x64xf32>
    attributes {dsf.slot_attention = {heads = 2 : i64, width = 64 : i64, window = 4 : i64, k = 8 : i64, scale = 0.125 : f32, page_entries = 16 : i64, packed = "nvfp4"}} {
  %c0 = arith.constant 0 : index
  %t = memref.dim %q, %c0 : memref<?x2x64xf32>
  %o = memref.alloc(%t) : memref<?x2x64xf32>
  return %o : memref<?x2x64xf32>
}

// -----

// expected-error @below {{dsf-gpu-sink-attention: a dsf.slot_attention helper that is not the bufferized}}
func.func private @dsf_attention_slots_packed_unknown(%q: memref<?x2x64xf32>, %rings: memref<?x64xf32>,
    %pos: memref<?xi32>, %pages: memref<?x36xi8>, %table: memref<?x?xi32>, %sel: memref<?x8xi32>,
    %sink: memref<2xf32>) -> memref<?x2x64xf32>
    attributes {dsf.slot_attention = {heads = 2 : i64, width = 64 : i64, window = 4 : i64, k = 8 : i64, scale = 0.125 : f32, page_entries = 16 : i64, packed = "nvfp5"}} {
  %c0 = arith.constant 0 : index
  %t = memref.dim %q, %c0 : memref<?x2x64xf32>
  %o = memref.alloc(%t) : memref<?x2x64xf32>
  return %o : memref<?x2x64xf32>
}

// -----

// With mma-min-batch N >= 1 (not batch-invariant) a batched step of N
// sequences or more whose width is a multiple of 128 takes the tensor-core
// kernel: first a kernel gathers sequence t's column c into bf16 row
// t (W + k) + c — band column c its ring's row (t W + (p - (W - 1) + c) mod W,
// when that position is >= 0), entry s the row selection[t, s] mod 16 of
// page table[t, selection[t, s] div 16] (when the entry is >= 0, its page
// within the table and the row within the pool), else zeros — and stores
// whether it is a row; the attention kernel then reads row t (W + k) + c
// and that flag. Smaller steps keep the SIMT kernel. mma-min-tokens alone
// leaves a batched step's helper on the SIMT kernel.
func.func private @dsf_attention_slots_h4_d128_w16_k8_s3e000000_e16(%q: memref<?x4x128xf32>, %rings: memref<?x128xf32>,
    %pos: memref<?xi32>, %pages: memref<?x128xf32>, %table: memref<?x?xi32>, %sel: memref<?x8xi32>,
    %sink: memref<4xf32>) -> memref<?x4x128xf32>
    attributes {dsf.slot_attention = {heads = 4 : i64, width = 128 : i64, window = 16 : i64, k = 8 : i64, scale = 0.125 : f32, page_entries = 16 : i64}} {
  %c0 = arith.constant 0 : index
  %t = memref.dim %q, %c0 : memref<?x4x128xf32>
  %o = memref.alloc(%t) : memref<?x4x128xf32>
  return %o : memref<?x4x128xf32>
}
// BATCHMMA-LABEL: func.func private @dsf_attention_slots_h4_d128_w16_k8_s3e000000_e16
// BATCHMMA: %[[T:.*]] = memref.dim %arg0, %c0
// BATCHMMA: %[[MANY:.*]] = arith.cmpi uge, %[[T]], %c8
// BATCHMMA: scf.if %[[MANY]] {
// BATCHMMA: %[[GATHERED:.*]] = arith.muli %[[T]], %c24
// BATCHMMA: %[[KV:.*]] = memref.alloc(%[[GATHERED]]) : memref<?x128xbf16>
// BATCHMMA: %[[VALID:.*]] = memref.alloc(%[[GATHERED]]) : memref<?xi32>
// BATCHMMA: %[[PAGES:.*]] = memref.dim %arg4, %c1
// BATCHMMA: gpu.launch
// BATCHMMA: %[[AT:.*]] = arith.divui %{{.*}}, %c32
// BATCHMMA: %[[SEQ:.*]] = arith.divui %[[AT]], %c24
// BATCHMMA: %[[COL:.*]] = arith.remui %[[AT]], %c24
// BATCHMMA: %[[BAND:.*]] = arith.cmpi ult, %[[COL]], %c16
// BATCHMMA: scf.if %[[BAND]] -> (i1, index) {
// BATCHMMA: memref.load %arg2[%[[SEQ]]] : memref<?xi32>
// BATCHMMA: arith.cmpi uge, %{{.*}}, %c15
// BATCHMMA: arith.remui %{{.*}}, %c16
// BATCHMMA: } else {
// BATCHMMA: memref.load %arg5[%[[SEQ]], %{{.*}}] : memref<?x8xi32>
// BATCHMMA: arith.cmpi ult, %{{.*}}, %[[PAGES]]
// BATCHMMA: scf.if %{{.*}} -> (i1, index) {
// BATCHMMA: memref.load %arg4[%[[SEQ]], %{{.*}}] : memref<?x?xi32>
// BATCHMMA: arith.cmpi ult, %{{.*}}, %dim
// BATCHMMA: vector.load %arg1{{.*}} : memref<?x128xf32>, vector<4xf32>
// BATCHMMA: vector.load %arg3{{.*}} : memref<?x128xf32>, vector<4xf32>
// BATCHMMA: arith.truncf %{{.*}} : vector<4xf32> to vector<4xbf16>
// BATCHMMA: vector.store %{{.*}}, %[[KV]][%[[AT]], %{{.*}}]
// BATCHMMA: memref.store %{{.*}}, %[[VALID]][%[[AT]]] : memref<?xi32>
// BATCHMMA: gpu.terminator
// BATCHMMA: gpu.launch blocks(%[[TOK:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[T]], {{.*}} dynamic_shared_memory_size
// BATCHMMA: %[[SEQROW:.*]] = arith.muli %[[TOK]], %c24
// BATCHMMA: %[[ROW:.*]] = arith.addi %[[SEQROW]]
// BATCHMMA: memref.load %[[VALID]][%[[ROW]]] : memref<?xi32>
// BATCHMMA-COUNT-4: nvgpu.device_async_copy %[[KV]][%[[ROW]]
// BATCHMMA: nvvm.mma.sync
// BATCHMMA: memref.dealloc %[[KV]]
// BATCHMMA: memref.dealloc %[[VALID]]
// BATCHMMA: } else {
// BATCHMMA-NOT: nvgpu
// BATCHMMA: gpu.launch
// BATCHMMA: return
// MMA-LABEL: func.func private @dsf_attention_slots_h4_d128_w16_k8_s3e000000_e16
// MMA-NOT: nvgpu
// MMA: return
// BATCHINVARIANT-LABEL: func.func private @dsf_attention_slots_h4_d128_w16_k8_s3e000000_e16
// BATCHINVARIANT-NOT: nvgpu
// BATCHINVARIANT: return

// -----

// Packed pages (nvfp4) on the tensor cores: the gathering kernel decodes
// each of its four channels from the entry's code byte (its nibble: the
// E2M1 value) and its block's scale byte (E4M3) as the SIMT kernel does,
// in registers rather than from a table in shared memory.
func.func private @dsf_attention_slots_packed_h4_d128_w16_k8_s3e000000_e16(%q: memref<?x4x128xf32>, %rings: memref<?x128xf32>,
    %pos: memref<?xi32>, %pages: memref<?x72xi8>, %table: memref<?x?xi32>, %sel: memref<?x8xi32>,
    %sink: memref<4xf32>) -> memref<?x4x128xf32>
    attributes {dsf.slot_attention = {heads = 4 : i64, width = 128 : i64, window = 16 : i64, k = 8 : i64, scale = 0.125 : f32, page_entries = 16 : i64, packed = "nvfp4"}} {
  %c0 = arith.constant 0 : index
  %t = memref.dim %q, %c0 : memref<?x4x128xf32>
  %o = memref.alloc(%t) : memref<?x4x128xf32>
  return %o : memref<?x4x128xf32>
}
// BATCHMMA-LABEL: func.func private @dsf_attention_slots_packed_h4_d128_w16_k8_s3e000000_e16
// BATCHMMA: scf.if
// BATCHMMA: %[[KV:.*]] = memref.alloc(%{{.*}}) : memref<?x128xbf16>
// BATCHMMA: gpu.launch
// BATCHMMA: vector.load %arg1{{.*}} : memref<?x128xf32>, vector<4xf32>
// BATCHMMA-COUNT-8: memref.load %arg3[%{{.*}}, %{{.*}}] : memref<?x72xi8>
// BATCHMMA: vector.from_elements %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : vector<4xf32>
// BATCHMMA: arith.truncf %{{.*}} : vector<4xf32> to vector<4xbf16>
// BATCHMMA: gpu.terminator
// BATCHMMA: nvvm.mma.sync
// BATCHMMA: } else {
// BATCHMMA: gpu.launch
// BATCHMMA: return
