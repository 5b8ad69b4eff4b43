//===- Passes.td - passes that leave the dsf dialect -------*- tablegen -*-===//
#ifndef DSF_LOWERING_PASSES_TD
#define DSF_LOWERING_PASSES_TD

include "mlir/Pass/PassBase.td"

def DsfToLinalg : Pass<"dsf-to-linalg", "::mlir::ModuleOp"> {
  let summary = "Lower dsf ops to linalg / tensor / arith / math on tensors";
  let description = [{
    Takes every function out of its dsf.model: layer regions are inlined, and
    each weight a function reads becomes a trailing argument (in declaration
    order; recorded in the function's `dsf.weights` attribute for the
    artifact's bindings) or, when it has a `value`, a constant. The dsf ops
    become linalg.generic computations in f32 (RMSNorm, projections, rope with
    YaRN frequencies computed at compile time, mHC streams, embedding rows).

    Every dsf op is lowered (see lowering/README.md); an op in a form the
    lowering does not handle fails to legalize with a diagnostic naming it.

    Weights declared bf16 are bound as bf16 (`weight-storage=declared`, the
    default; other floats as f32): the products, the
    embedding, the norms and the experts read the stored elements and widen
    each to f32 as they read it (arith.extf, exact), so a bf16 checkpoint's
    weights take half the bytes in memory and per token; the few consumers
    that read a small weight whole (biases, mHC's tensors, sinks) get it
    widened once. `weight-storage=f32` binds every float weight as f32 (the
    anchor of bench/gpu_weight_storage.py). Integer tables stay i32.
    `weight-storage=released` is `declared`, but a weight in MXFP4 (E2M1,
    a UE8M0 scale per 32 along the last axis) that only dsf.moe_experts
    reads is bound as the checkpoint holds it: NAME as i8 [E, out, in / 2]
    (two codes a byte, low nibble first) and NAME.scale as i8
    [E, out, in / 32]; the experts' products decode each element as they
    read it (the value the runtime would have widened, bit for bit), from
    4.25 bits an element instead of 16. So is a rank-2 weight in FP8 (E4M3,
    UE8M0 scales over 2-D blocks) that only dsf.linear, dsf.ffn and
    dsf.grouped_linear read (the last when each group's rows are whole
    blocks of scales): NAME as i8 in the declared shape and NAME.scale as i8
    [ceil(out / rows), ceil(in / cols)]; its product's generic decodes each
    element and carries `dsf.packed_fp8 = [rows, cols]` (8.01 bits an
    element for 32 x 32 blocks); a grouped product reads codes and scales
    per group ([G, r, in] and [G, r / rows, ceil(in / cols)]).

    The indexer's top-k is exact either way: below `topk-threshold-from`
    entries each candidate is ranked against every other (O(entries^2) a
    token, few kernels), from there by a threshold search (the k-th largest
    score's bits found one bit a pass, ties cut by index the same way, then
    a blocked scan and a binary search place the chosen indices: O(entries)
    a pass, about 60 passes). Both give the same selection, bit for bit.
  }];
  let options = [Option<"topkThresholdFrom", "topk-threshold-from", "int64_t", "256",
                        "Entries from which the top-k is a threshold search (0: always)">,
                 Option<"pageTokens", "page-tokens", "int64_t", "64",
                        "Batched entry points: tokens a cache page covers (max(1, page-tokens / ratio) entries)">,
                 Option<"packedPages", "packed-pages", "bool", "true",
                        "Batched entry points: pages of a cache in FP8, MXFP4 or NVFP4 hold its packed "
                        "rows (codes, then a scale byte a block), decoded where they are read">,
                 Option<"weightStorage", "weight-storage", "std::string", "\"declared\"",
                        "How weights are bound: 'declared' (a bf16 weight stays bf16, widened "
                        "to f32 as the products read it), 'f32' (every float weight f32) or 'released' "
                        "(declared, the experts' MXFP4 and the projections' FP8 weights packed as the checkpoint "
                        "holds them)">];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
                           "::mlir::func::FuncDialect", "::mlir::scf::SCFDialect"];
}

def StateInPlace : Pass<"dsf-state-in-place", "::mlir::ModuleOp"> {
  let summary = "Batched entry points update their state in place: drop the state results that are their arguments";
  let description = [{
    Runs after one-shot bufferization (and drop-equivalent-buffer-results,
    which does the same for the private layer functions). A batched entry
    point (`dsf.batched`) returns, after its logits, each state slot it
    continued (`dsf.state`): each must be the buffer of the argument it
    continues, the slots written in place, and the pass drops them from the
    results, so the caller's buffers are the state and nothing is copied or
    freed. A state result that is another buffer (the bufferization copied a
    slot) is an error naming the slot: the runtime would lose the update.
  }];
}

def FoldRoundTripCopies : Pass<"dsf-fold-round-trip-copies", "::mlir::ModuleOp"> {
  let summary = "Ops update a buffer in place of the fresh copy that is copied back to it";
  let description = [{
    Runs after one-shot bufferization, before the deallocations are placed.
    A `memref.copy` of a buffer S into a fresh allocation T, later copied
    back (`memref.copy T, S`), where every op between touches T only through
    identity indexing maps (linalg ops) and nothing that may alias S: the
    ops take S in T's place and both copies and T go. (RoPE's odd channels:
    bufferization stages them so, the even ones updated in place beside
    them.) Two buffers are apart when they come from different allocations
    (or an allocation and an argument), or are strided views of one dense
    buffer whose offsets differ in one dimension by less than its stride;
    anything else is taken to alias, and the copies stay. The values
    computed are the same bit for bit.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def FoldOutputCopies : Pass<"dsf-fold-output-copies", "::mlir::ModuleOp"> {
  let summary = "Ops write a copy's target in place of the fresh buffer copied there";
  let description = [{
    Runs after one-shot bufferization, before the deallocations are placed.
    A `memref.copy` of a fresh allocation T into a view D (the rows a cache
    or window write appends, computed into T by a quantizer): when every
    other use of T writes it and nothing else (an elementwise linalg op
    whose only output is T and whose body only loads, or a copy into T),
    each reads only buffers apart from D (or constant tables), and no op
    between the first of them and the copy writes or frees a buffer they
    read, they move to the copy in their order, write D in T's place, and
    the copy and T go. What may alias is decided as in
    dsf-fold-round-trip-copies (BufferAliasing.h). The values computed are
    the same bit for bit; on the GPU a copy kernel less at each such write.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def NameConstants : Pass<"dsf-name-constants", "::mlir::ModuleOp"> {
  let summary = "Name bufferization's constant globals in the order of their first use";
  let description = [{
    Runs after one-shot bufferization, which names each tensor constant's
    private `memref.global` after its type (`__constant_32xf32`, `_0`, ...)
    in an order MLIR 22 takes from pointer-keyed maps (llvm-project#184722):
    the same model then compiled to different bytes from run to run. The
    pass renames those globals (private, constant, named `__constant_...`)
    in the order of their first `memref.get_global` in the module (unused
    ones after, in module order), rewrites every reference to them, and
    moves them to the module's start in that order. A new name held by a
    symbol that is not such a global is an error naming it.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def SinkGlobalsIntoKernels : Pass<"dsf-sink-globals-into-kernels", "::mlir::ModuleOp"> {
  let summary = "Let kernels read constant tables from their own module, not the host's";
  let description = [{
    A `memref.get_global` of the host code (a constant table, such as RoPE's
    frequencies) used inside a `gpu.launch` is cloned into the launch body,
    so that gpu-kernel-outlining copies the global into the kernel's
    gpu.module: the device reads its own copy instead of host memory it
    cannot reach.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect", "::mlir::gpu::GPUDialect"];
}

def CopiesToLinalg : Pass<"dsf-copies-to-linalg", "::mlir::ModuleOp"> {
  let summary = "Turn the host code's buffer copies into linalg.copy, so that they become kernels";
  let description = [{
    Bufferization and the lowering of `bufferization.clone` leave
    `memref.copy` ops in the host code, which finalize-memref-to-llvm turns
    into a host memcpy. On the GPU the buffers live in device memory the host
    does not touch, so every copy outside a gpu.module becomes a
    `linalg.copy`, which the CUDA pipeline maps to a kernel like any other
    linalg op. Copies inside gpu.modules are left alone.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::memref::MemRefDialect"];
}

def AlignWorkgroupBuffers : Pass<"dsf-align-workgroup-buffers", "::mlir::ModuleOp"> {
  let summary = "Align each kernel's workgroup buffers as its vector accesses claim";
  let description = [{
    On outlined kernels (`gpu.func`): each workgroup attribution gets
    `llvm.align` (which convert-gpu-to-nvvm gives the buffer's global) of the
    largest `alignment` a `vector.load` or `vector.store` of it claims, or
    keeps a larger one it has. A claimed alignment on a view of a workgroup
    buffer is an error naming the kernel and the buffer: the base's
    alignment would not make it true.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::LLVM::LLVMDialect", "::mlir::vector::VectorDialect"];
}

def NameKernels : Pass<"dsf-name-kernels", "::mlir::ModuleOp"> {
  let summary = "Name each outlined kernel after its host function and the dsf op it came from";
  let description = [{
    After gpu-kernel-outlining every kernel of a host function has the same
    name (`<function>_kernel`), which is all a profiler shows. Each launched
    `gpu.func` is renamed `<function>__<op>_<n>`: `<op>` is the first
    NameLoc of the launch's location (dsf-to-linalg tags every dsf op's
    location with its op name, and a projection's with its weight, as in
    `linear.attn.wq_b`), else of an op in the kernel's body, else `op`;
    non-identifier characters become '_', and `<n>` counts that op's kernels
    in that function. The launches are updated; nothing else changes.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def GpuGridDependencyControl : Pass<"dsf-gpu-grid-dependency-control", "::mlir::ModuleOp"> {
  let summary = "Every kernel waits for the grids before it at entry, so the next may launch early";
  let description = [{
    On outlined kernels: each `gpu.func` kernel of every `gpu.module` begins
    with PTX `griddepcontrol.wait` (nothing of the kernel runs before the
    grids it depends on have completed and their writes are visible), as
    `llvm.inline_asm` that clobbers memory so that no load is moved above
    it, and then `nvvm.griddepcontrol launch_dependents`
    (the next grid may be scheduled once every block of this one has begun),
    and each module gets the external constant `@dsf_grid_dependency_control`
    (an i32, 1) that tells the runtime it may launch the module's kernels
    with programmatic stream serialization (sm_90's programmatic dependent
    launch): the launch and the first blocks of a kernel then overlap the
    last blocks of the one before it. A module that already defines that
    symbol otherwise is an error naming the module. Needs sm_90 or later.
  }];
  let options = [
    Option<"launchDependentsAtEntry", "launch-dependents-at-entry", "bool", /*default=*/"true",
           "signal launch_dependents right after the wait (the next grid may be scheduled once every block of this "
           "one has begun); false: no signal, the next grid is scheduled as this one's blocks exit">,
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::LLVM::LLVMDialect", "::mlir::NVVM::NVVMDialect"];
}

def MergeKernelModules : Pass<"dsf-merge-kernel-modules", "::mlir::ModuleOp"> {
  let summary = "One gpu.module per host function instead of one per kernel";
  let description = [{
    After gpu-kernel-outlining (and dsf-name-kernels, which makes a
    function's kernel names distinct), the kernels launched by one host
    function move into the first of their modules; launches are updated and
    the emptied modules erased. Constant `memref.global`s outlined into
    several of the modules are kept once; any other symbol defined twice, or
    modules of different targets, is an error. A module launched from more
    than one function stays as it is. Every module is a ptxas run when
    compiling and a module load when the artifact is opened, so this cuts
    both from one per kernel to one per layer function.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::memref::MemRefDialect"];
}

def PlaceBuffers : Pass<"dsf-place-buffers", "::mlir::ModuleOp"> {
  let summary = "Keep the host code's own scratch on the host and prove it touches no device buffer";
  let description = [{
    After kernel outlining, decides where each buffer of the host code lives.
    A buffer whose contents the host code reads or writes (memref.load,
    memref.store, directly or through views and calls) and that no kernel
    uses is host scratch, such as the pointer and ownership arrays of the
    lowered deallocations: it becomes a `memref.alloca` on the stack (it must
    have a static shape and stay in its function). Every other buffer is a
    device buffer, allocated by the runtime in device memory, which the host
    code never dereferences: that is what lets the runtime queue kernels
    without synchronizing between them.

    The host code may also read an entry point's token inputs (the arguments
    before its `dsf.state` and `dsf.weights`: ids, positions, image mask),
    which the runtime keeps in host-visible memory; it uses them for shapes
    that depend on positions. Anything else is an error naming the op: the
    host code touching a buffer kernels use, writing an entry point's
    argument, reading its state or weights, or host scratch of dynamic size
    or returned from its function.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def TileParallelLoops : Pass<"dsf-tile-parallel-loops", "::mlir::ModuleOp"> {
  let summary = "Split each kernel's parallel loops into blocks and threads, innermost dimension first";
  let description = [{
    Tiles every outermost `scf.parallel` of the host code into a loop over
    blocks and a loop over the threads of a block, for gpu-map-parallel-loops
    (with its innermost-first policy) to map. The `threads` of a block go to
    the innermost dimension first, up to its static extent rounded up to a
    power of two (all of them to a dynamic one), then outward: the innermost
    dimension is the contiguous one, so consecutive threads touch
    consecutive addresses (coalesced), and a dimension of 4 does not leave
    124 threads idle. Out-of-range threads are masked (no min/max bounds).
    When a block dimension other than the innermost may pass CUDA's 65,535
    (gridDim.y and z; a dynamic one: tokens, cache entries), the loop's block
    dimensions are collapsed into one, innermost fastest, for gridDim.x.
  }];
  let options = [Option<"threads", "threads", "int64_t", "128", "Threads per block">];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect", "::mlir::affine::AffineDialect"];
}

def GpuTiledMatmul : Pass<"dsf-gpu-tiled-matmul", "::mlir::ModuleOp"> {
  let summary = "Run the projections (rows times a transposed weight) as shared-memory tiled GPU kernels";
  let description = [{
    Rewrites each bufferized `linalg.generic` that computes
    C[t, o] += sum_d A[t, d] * W[o, d] (the shape of every projection: a
    linear layer, the mHC mix, the head) in f32 into a `gpu.launch` of a
    tiled kernel: blocks of 256 threads compute 64 x 64 tiles of C, staging
    64 x 16 tiles of A and W in workgroup (shared) memory with coalesced
    loads, each thread accumulating a 4 x 4 sub-tile in registers. Below
    `min-rows` rows (decode), where a tile of 64 rows would mostly idle, an
    `scf.if` takes a second kernel instead: a warp per output, its lanes
    reading the weight's row 32 consecutive values at a time (coalesced)
    and adding their partial sums with shuffles. Still f32: the same sums in
    another order. Each kernel writes every output once: when C was zeroed
    just before (the `linalg.fill` that dsf-to-linalg puts before every
    projection), they store their sums instead of adding them to C, and the
    fill, a kernel of its own, goes. The warp kernel also runs from
    `min-rows` up to 128 rows when the tiles would be fewer than
    `min-blocks` (half the H200's 132 SMs): a tile takes as long with 64
    rows as with 128, and the warp kernel's rows past the first read the
    weight from L2 (a batched decode's shared FFN: 18 tiles of 128 x 128 at
    64 rows, 12.5 ms a step against 4.1 in the warp kernel; wo_a's 128
    tiles of 64 x 64 stay, 1.7 against 3.4).

    A product of an FP8 weight bound packed (dsf-to-linalg's
    weight-storage=released: a generic marked `dsf.packed_fp8 = [rows,
    cols]`, W its E4M3 codes i8 [N, K], its body reading the UE8M0 scales
    i8 [ceil(N / rows), ceil(K / cols)]; or grouped, W i8 [G, N, K] and
    the scales i8 [G, ceil(N / rows), ceil(K / cols)], a group a
    blockIdx.z) takes the same kernels, decoding each element from its code
    and its block's scale: with cp-async and bf16 math, when a row's bytes
    are a multiple of 16 and `cols` of 32, the tiles copy a stage's codes
    as stored and decode them once in shared memory (TiledGemm::
    stagedCodesW; else they decode each element as they stage it); the warp
    kernel reads eight codes a 64-bit load, converted two an instruction
    (cvt.rn.f16x2.e4m3x2), when K and `cols` are multiples of 8 (a half of
    bf16's bytes). A marked generic of another form is an error naming the
    mark.

    With `batch-invariant`, the few-rows case keeps the generic (one thread
    per output) instead: it adds the products in the same order as the tiled
    kernel, so a row's result does not depend on how many rows ran with it
    and a decode equals its prefill bit for bit, at the cost of a slower
    decode.

    With `math=tf32` or `math=3xtf32` the tiled kernel runs on the tensor
    cores (mma.sync m16n8k8, tf32 operands, f32 accumulation; 3xtf32 adds
    the hi*lo terms of split operands for about f32's accuracy); the same
    option in dsf-gpu-grouped-experts and dsf-gpu-batched-contraction. Any
    other value is an error. With `math=bf16` (mma.sync m16n8k16) and
    `cp-async` (the default), a product whose A and W are identity-layout
    f32 or bf16 buffers with a depth that is a multiple of 8 is staged by
    `nvgpu.device_async_copy` (cp.async, 16 bytes, zero-filled past the
    edges) into a ring of three 32-deep stages in dynamic shared memory,
    `nvvm.cp.async.wait.group` and one barrier a stage; its fragments are
    read as stored and an f32 pair rounded to bf16 as it is read: the same
    mma sequence as the register-staged kernel (`cp-async=false`), so the
    same sums bit for bit.
    With `bf16-copies` an f32 A is first rounded to a bf16 copy by a kernel
    of its own, and the tiles (and the split-depth tiles below) stage that:
    each column tile reads half the bytes of A, and its ring takes a third
    less shared memory; rounded as the kernel would round it as it is read,
    the sums stay the same bit for bit. It is off by default: a decode
    step's A is a few rows, and the copy's launch cost what it saved
    (bench/results/gpu-narrow-expert-tiles.md).

    With `math=bf16` and cp.async, a product of `split-min-rows` to 127 rows
    that the tiles do not take (fewer than `min-blocks` tiles, or fewer
    than `min-rows` rows) and whose N and K are static runs on 64 x 64 bf16
    tiles with its depth split: enough parts (of 256 depths or more, whole
    32-deep stages) that the tiles of one row number some 264 blocks (two
    waves of the H200's SMs), each part's sums stored to a scratch buffer
    and a second kernel adding the parts in order (one order for any launch)
    before it stores (or adds to C). A batched decode's wo_b at 64 rows is
    80 tiles of 64 x 64 in 4 parts of 2,048 depths: 320 blocks instead of
    the warp kernel's re-reads of its weight from L2 for every row. Not with
    `batch-invariant`; 0 turns it off.

    With `fuse-consumers` (the default), the next generic with a memory
    effect other than an allocation, when it is all parallel over C's
    indices, reads C only element by element (the identity map, no other
    view of C), does not read its own output and writes no view of C, A or
    W (an add into the residual, SwiGLU after its second projection), is
    computed by the product's kernels where they store C's element, from the
    sum in their registers, at the consumer's place: the same values bit for
    bit, a launch less. Not with `batch-invariant` (its generic below the
    tiles stays).
  }];
  let options = [Option<"minRows", "min-rows", "int64_t", "16", "Rows from which the tiled kernel runs">,
                 Option<"minBlocks", "min-blocks", "int64_t", "::mlir::dsf::kDefaultTileMinBlocks",
                        "Tiles from which the tiled kernel runs below 128 rows (0: any)">,
                 Option<"batchInvariant", "batch-invariant", "bool", "false",
                        "Sum in one order whatever the number of rows">,
                 Option<"math", "math", "std::string", "\"f32\"",
                        "The tiled kernel's arithmetic: f32 (SIMT), tf32, 3xtf32 or bf16 (tensor cores, mma.sync)">,
                 Option<"cpAsync", "cp-async", "bool", "true",
                        "With bf16 math, copy operands whose rows are contiguous by cp.async into a ring of stages">,
                 Option<"splitMinRows", "split-min-rows", "int64_t", "::mlir::dsf::kDefaultTileSplitMinRows",
                        "With bf16 math and cp.async, rows from which a product the tiles do not take runs as split-depth bf16 tiles below 128 rows (0: never)">,
                 Option<"bf16Copies", "bf16-copies", "bool", "false",
                        "With bf16 math and cp.async, stage an f32 A from a bf16 copy made before the tiles (the same sums, half the bytes of A a column tile)">,
                 Option<"fuseConsumers", "fuse-consumers", "bool", "true",
                        "Compute the elementwise generic that reads C element by element where the kernels store C">];
  let dependentDialects = ["::mlir::NVVM::NVVMDialect", "::mlir::LLVM::LLVMDialect", "::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect", "::mlir::vector::VectorDialect", "::mlir::nvgpu::NVGPUDialect", "::mlir::affine::AffineDialect"];
}

def GpuGroupedExperts : Pass<"dsf-gpu-grouped-experts", "::mlir::ModuleOp"> {
  let summary = "Run the routed experts as tiled GEMMs over each expert's rows";
  let description = [{
    Rewrites each bufferized `linalg.generic` marked `dsf.experts` by
    dsf-to-linalg ("project": g[t, s, :] += W[e[t, s]] x[t]; "down":
    y[t, :] += sum over slots s of W2[e[t, s]] h[t, s, :]). From `min-rows`
    (token, slot) rows: the rows are counted and ranked per expert (atomics),
    their starts and tile starts summed on one thread, a permutation puts
    them in expert order, and the tiled GEMM kernel of dsf-gpu-tiled-matmul
    runs with each block's rows, gathered through the permutation, against
    its expert's weight; a down product writes z[t, s, :] and adds the slots
    in order. Below `min-rows`, or below `min-rows-per-expert` rows for
    each expert on average (a tile computes its expert's whole tile of rows,
    mostly padding for a batched decode's few), a warp per output reads its
    row's expert. Where the tiles for the output's columns are 128 x 128,
    below `wide-min-rows-per-expert` rows an expert on average they are
    64 x 64 (the same sums, bit for bit: each output's mma sequence over
    the depth is one on either tile).
    With `batch-invariant`, every row count takes the tiled path, so a
    row's sums never depend on the other rows. With `math=bf16` and
    `cp-async`, the tiled kernel copies the gathered rows and the expert's
    weight rows by cp.async (see dsf-gpu-tiled-matmul), each thread's rows
    found through the permutation once, before the stages. With `bf16-copies`, an f32
    input is staged from a bf16 copy made once for the product.

    Each (token, slot) row is computed once and each output stored once:
    when the output was zeroed just before, the kernels store their sums
    (a down product's slots are added from 0) and the fill's kernel goes.
    With `fuse-consumers` (the default), the elementwise generic after a
    "project" product that reads its output element by element (the
    experts' SwiGLU after their second projection; the conditions of
    dsf-gpu-tiled-matmul's) is computed where the kernels store that
    output, from the sum in their registers. The same values bit for bit.

    A marked generic that is not of these forms is an error naming it.
  }];
  let options = [Option<"minRows", "min-rows", "int64_t", "16", "(token, slot) rows from which the tiled kernel runs">,
                 Option<"minRowsPerExpert", "min-rows-per-expert", "int64_t", "::mlir::dsf::kDefaultTileMinRowsPerExpert",
                        "Rows for each expert on average from which the tiled kernel runs">,
                 Option<"wideMinRowsPerExpert", "wide-min-rows-per-expert", "int64_t",
                        "::mlir::dsf::kDefaultTileWideMinRowsPerExpert",
                        "Where the tiles are 128 x 128, rows for each expert on average from which they run; below, 64 x 64 tiles (0: always 128 x 128)">,
                 Option<"batchInvariant", "batch-invariant", "bool", "false",
                        "Sum in one order whatever the number of rows">,
                 Option<"math", "math", "std::string", "\"f32\"",
                        "The tiled kernel's arithmetic: f32 (SIMT), tf32, 3xtf32 or bf16 (tensor cores, mma.sync)">,
                 Option<"cpAsync", "cp-async", "bool", "true",
                        "With bf16 math, copy operands whose rows are contiguous by cp.async into a ring of stages">,
                 Option<"bf16Copies", "bf16-copies", "bool", "false",
                        "With bf16 math and cp.async, stage an f32 A from a bf16 copy made before the tiles (the same sums, half the bytes of A a column tile)">,
                 Option<"fuseConsumers", "fuse-consumers", "bool", "true",
                        "Compute the elementwise generic that reads a \"project\" product's output element by element where the kernels store it">];
  let dependentDialects = ["::mlir::NVVM::NVVMDialect", "::mlir::LLVM::LLVMDialect", "::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect", "::mlir::linalg::LinalgDialect", "::mlir::affine::AffineDialect",
                           "::mlir::vector::VectorDialect", "::mlir::nvgpu::NVGPUDialect"];
}

def GpuBlockReduce : Pass<"dsf-gpu-block-reduce", "::mlir::ModuleOp"> {
  let summary = "Run order-free reductions as a block of threads per output";
  let description = [{
    Rewrites each bufferized `linalg.generic` whose parallel dimensions come
    first, whose output is indexed by exactly them, and whose body yields
    combine(out, value) with an order-free combination (i32 addi; f32
    maximumf, minimumf, maxnumf, minnumf) into a `gpu.launch` of one block
    of 256 threads per output: each thread combines the reduction points
    tid, tid + 256, ... (the body cloned, its inputs loaded through their
    indexing maps), then xor shuffles within a warp, shared memory across
    the 8 warps, and lane 0 of warp 0 combines the output's value with the
    total. For those the result is the generic's exactly. Float sums (f32
    addf) are taken when their reduction has a static length of at least
    `min-sum-points` (RMSNorm over the model width or the 512-wide latent,
    the mHC's flattened streams): another order of additions than the
    generic's, but one that does not depend on the number of tokens, so
    batch invariance holds for that sum. Shorter or dynamic float sums stay
    as they are. (A decode token's sum of 512 in one thread waits on its
    loads one after another: some 14 us a launch at V4.1's sizes, where the
    block takes a few.) The CUDA pipeline keeps 1,024 for --batch-invariant:
    at 256 the tiny V4.1's decode and prefill no longer agree bit for bit on
    the H200 (1e-6 before the FP4 quantizers; the sum at fault is not yet
    traced), at 1,024 they do. When the output was filled with the
    combination's identity just before (a norm's zeroed sum), lane 0 writes
    the total without reading the output and the fill goes: a launch less.
    With `fuse-consumers` (the default), the next generic with a memory
    effect other than an allocation, when it is all parallel, reads the
    output only through the projection onto the reduction's parallel
    dimensions (d0 .. dp-1), does not read its own output, writes no view
    of the reduction's operands, and has static trailing dimensions of at
    most 16,384 points (an RMSNorm's scaling), runs in the same block after
    a barrier: each thread its points in strides of 256, the body cloned,
    at the consumer's place. The values are the two kernels' bit for bit;
    a norm is one launch.
  }];
  let options = [Option<"minSumPoints", "min-sum-points", "int64_t", "256",
                        "Static reduction length from which float sums run as a block per output">,
                 Option<"fuseConsumers", "fuse-consumers", "bool", "true",
                        "Compute the elementwise generic that reads the result row by row in the same block">];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect", "::mlir::affine::AffineDialect"];
}

def GpuBatchedContraction : Pass<"dsf-gpu-batched-contraction", "::mlir::ModuleOp"> {
  let summary = "Run per-token products against gathered rows as the tiled GEMM kernel";
  let description = [{
    Rewrites each bufferized `linalg.generic` of the form
    C[b, m, n] += A[b, m, k] * X(b, n, k) (loops b, m, n parallel, k a
    reduction; A an input indexed (b, m, k); X whatever the body computes
    from the other inputs and the indices without m: a row of a cache picked
    by a selection, a band of the window, a key) into the tiled GEMM kernel
    of dsf-gpu-tiled-matmul with blockIdx.z = b: A's rows and X's columns
    staged in shared memory, X's computation cloned into the staging loads.
    Attention's logits and outputs and the indexer's dots take this form.
    Every output adds its products in the order of k, as the generic does
    (from zero, then onto C): the same results when C starts at zero, as
    dsf-to-linalg's products do. Products of a static number of rows m below
    `min-rows` (a few heads) stay generics: a 64-row tile would mostly idle.
  }];
  let options = [Option<"minRows", "min-rows", "int64_t", "16", "Static rows (heads) from which the tiled kernel runs">,
                 Option<"math", "math", "std::string", "\"f32\"",
                        "The tiled kernel's arithmetic: f32 (SIMT), tf32, 3xtf32 or bf16 (tensor cores, mma.sync)">];
  let dependentDialects = ["::mlir::NVVM::NVVMDialect", "::mlir::LLVM::LLVMDialect", "::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect", "::mlir::affine::AffineDialect", "::mlir::vector::VectorDialect"];
}

def GpuFuseMhc : Pass<"dsf-gpu-fuse-mhc", "::mlir::ModuleOp"> {
  let summary = "Run each mHC site helper as one pass over the streams and a warp or thread per token";
  let description = [{
    dsf-to-linalg runs every mHC site through a helper function per shape
    (marked `dsf.hc_site = {n, width, iters, eps, norm_eps, update,
    collapse}`): the residual update when the site is fused, the (2+n)n
    projections of the flattened streams and their sum of squares, the
    logits, sigmoid, the row softmax, the Sinkhorn rounds, and the next
    input's collapse when asked, some twenty kernels a site. On bufferized
    IR this pass replaces the helper's body with two kernels: a block of 256
    threads per (token, 256 channels) writes X' and the collapse at its
    channels and sums its share of the projections and squares (warp
    shuffles, then the warps in order) into a partial; a warp per token (when
    the (2+n)n + 1 values fit its lanes: a lane per value, then a lane per
    cell of the combination matrix, sums by index shuffles) or else a thread
    per token adds the partials in order and computes the coefficients.
    The update, the collapse and the per-token arithmetic are the linalg's
    in its order; the long sums add in another order than the CPU's, the
    same for any number of tokens. Helpers of more than 8 streams stay as
    they are; a helper whose signature is not its shape's is an error.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect"];
}

def GpuSelectTopk : Pass<"dsf-gpu-select-topk", "::mlir::ModuleOp"> {
  let summary = "Run each top-k helper as one kernel, a block per token";
  let description = [{
    dsf-to-linalg selects the indexer's top-k in a helper function per (k,
    threshold-from) (marked `dsf.topk = {k}`): scores [tokens, entries], -inf
    where an entry is no candidate, to [tokens, k] ascending entry indices,
    -1 padded; its linalg is a threshold search of some 150 kernels. On
    bufferized IR this pass replaces the helper's body with one kernel, a
    block of 512 threads per token: the k-th largest key by a radix select
    over four 8-bit digits (shared-memory histograms, warp 0 picking each
    digit with shuffles), then one pass over the entries in index order in
    which block scans rank the ties at the threshold (the first
    k - #above are kept, as the linalg's cut keeps them) and give each
    selected entry its slot. The same entries in the same order as the
    linalg, for any number of entries. A helper whose signature is not
    memref<?x?xf32> -> memref<?xKxi32> is an error.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
}

def GpuSinkAttention : Pass<"dsf-gpu-sink-attention", "::mlir::ModuleOp"> {
  let summary = "Run each sink-attention helper as one kernel, a block per (token, head); bf16 prefills optionally on the tensor cores";
  let description = [{
    dsf-to-linalg runs sink attention over a layer's window band and its
    selected cache entries in a helper function per shape (marked
    `dsf.attention = {heads, width, window, k, scale}`; k = 0: the window
    only): queries [tokens, heads, width], window rows, [cache rows,
    selection [tokens, k] i32 (-1: none)], sink [heads] -> [tokens, heads,
    width], some fifteen kernels in linalg. On bufferized IR this pass
    replaces the helper's body with one kernel, a block per (token, head) —
    512 threads while the grid has fewer than 1,024 blocks (a decode's
    tokens: each block bound by the loads in flight on its SM), 256 from
    there (a prefill's: bound by the blocks an SM holds), 512 always with
    `batch-invariant` (the two differ in the order of the denominator's
    sum): the query in shared memory, each warp two columns' logits
    at a time (lanes strided over the width, both rows' loads together, xor
    shuffles), the maximum with the sink and the denominator (shuffles, then
    the warps in order), then each thread its channels' weighted sum over the
    columns in the linalg's order (the band, then the entries), sixteen
    rows' loads together. The logits' and the
    denominator's sums run in another order than the linalg's, one for any
    number of tokens. Widths that are not a multiple of 32 or above 4,096
    stay as they are; a helper whose signature is not its shape's is an error.

    With `mma-min-tokens` N >= 1 (0, the default: never; not
    batch-invariant) the sequence helper of a width that is a multiple of
    128 up to 512 runs a call of N tokens or more (a prefill's) on the
    tensor cores, its queries, rows and probabilities in bf16 and its sums
    in f32 whatever the projections' tile math (dsf-compile turns it on for
    --tile-math=bf16 builds; bench/results/gpu-attention-mma.md) — the
    rows in bf16 into one buffer (a kernel), then a block of 8 warps per
    (token, group of 16/32/64 heads) — every head reads the same rows (one
    KV head), so a block that holds all of them reads each row once — the
    columns in chunks of 64 copied by cp.async into a two-slot ring, S = Q
    K^T and P V on mma.sync m16n8k16 bf16 with ldmatrix fragments, the
    softmax online (the running maximum from the sink). Fewer tokens (a
    decode's) keep the SIMT kernels, which fill the GPU with a block per
    (token, head).

    With `mma-min-batch` N >= 1 (0, the default: never; not
    batch-invariant) a batched step's helper (dsf.slot_attention) of such a
    width runs a step of N sequences or more on the same tensor-core
    kernel, after a kernel that gathers each sequence's columns (its band's
    ring rows, its entries' page rows, packed ones decoded: E2M1 / E4M3
    times its scale is exact in bf16) into bf16 rows and their validity:
    the 64 heads of a sequence's one query are the M of the products.

    With `split-below-blocks` N >= 1 (0, the default: never) a
    tensor-core call of fewer than N blocks (tokens x groups of heads; a
    decode's one query a sequence) whose columns are more than one chunk of
    64 splits the chunks into parts, ceil(N / blocks) at most, a block per
    (token, group, part) (flash-decoding): each part's running maximum
    starts at the sink, and it stores its unnormalized output, maximum and
    sum; a third kernel merges the parts in order (the maximum over them,
    each rescaled by exp(its maximum - that), the sink's term once).
    dsf-compile passes 16 (kDefaultAttentionSplitBelowBlocks): a batched
    step of 1-15 sequences splits.
  }];
  let options = [Option<"batchInvariant", "batch-invariant", "bool", "false",
                        "One kernel (512 threads a block) for any number of tokens">,
                 Option<"mmaMinTokens", "mma-min-tokens", "int64_t", "0",
                        "Tokens from which a call's attention takes the bf16 tensor-core kernel (0: never)">,
                 Option<"mmaMinBatch", "mma-min-batch", "int64_t", "0",
                        "Sequences from which a batched step's attention takes the bf16 tensor-core kernel (0: never)">,
                 Option<"splitBelowBlocks", "split-below-blocks", "int64_t", "0",
                        "Blocks below which a tensor-core attention call splits its columns across blocks, merged by a second kernel (0: never)">];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect", "::mlir::NVVM::NVVMDialect",
                           "::mlir::LLVM::LLVMDialect", "::mlir::vector::VectorDialect", "::mlir::nvgpu::NVGPUDialect"];
}

def GpuRouteExperts : Pass<"dsf-gpu-route-experts", "::mlir::ModuleOp"> {
  let summary = "Run each MoE router helper as one kernel, a block per token";
  let description = [{
    dsf-to-linalg runs the router after its projection in a helper function
    per shape (marked `dsf.router = {experts, top_k, routed_scale, bias,
    image_bias}`): sqrt(softplus) scores, the bias (bias_vl for image
    tokens), a stable descending rank of every expert, the top-k's slots,
    the picked scores' sum and the weights, some ten kernels a layer. On
    bufferized IR this pass replaces the helper's body with one kernel, a
    block of 256 threads per token: scores and biased scores in shared
    memory, each thread ranking its experts against all, each kept rank's
    slot given its expert by a shared-memory atomic max (the linalg keeps
    the last expert of a rank, slot 0 by default), and thread 0 summing the
    picked scores in slot order for the weights. The linalg's values in its
    order. Routers of more than 4,096 experts stay as they are; a helper
    whose signature is not its shape's is an error.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect"];
}

def GpuFuseSinkhorn : Pass<"dsf-gpu-fuse-sinkhorn", "::mlir::ModuleOp"> {
  let summary = "Run each Sinkhorn helper as one kernel, a thread per token";
  let description = [{
    dsf-to-linalg writes the mHC's remaining Sinkhorn rounds as a helper
    function (marked `dsf.sinkhorn = {n, rounds, eps}`) whose loop runs a row
    and a column normalisation of the whole [tokens, n, n] tensor a round:
    four kernels a round, 19 rounds, at every mHC site. On bufferized IR this
    pass replaces the helper's body with one `gpu.launch`: a thread per
    token keeps its n x n matrix in registers through every round and
    writes it once to a fresh buffer (results are the caller's, as the
    deallocation pipeline has it). The arithmetic is the helper's, in the
    same order (sums from 0 in index order, x / (sum + eps)), so the results
    are bit for bit the same. Helpers of n above 8 stay as they are.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
}

#endif // DSF_LOWERING_PASSES_TD
