//===- DsfOps.td - dsf operations --------------------------*- tablegen -*-===//
#ifndef DSF_OPS_TD
#define DSF_OPS_TD

include "dialect/DsfTypes.td"
include "dialect/DsfInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/RegionKindInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

def Dsf_F32Tensor : RankedTensorOf<[F32]>;
def Dsf_IdTensor : RankedTensorOf<[I32, I64]>;
def Dsf_MaskTensor : RankedTensorOf<[I1]>;
def Dsf_CacheValue : Type<CPred<"::llvm::isa<::mlir::dsf::CacheType>($_self)">, "dsf cache">;
def Dsf_WindowValue : Type<CPred<"::llvm::isa<::mlir::dsf::WindowType>($_self)">, "dsf window">;
def Dsf_TopkValue : Type<CPred<"::llvm::isa<::mlir::dsf::TopkType>($_self)">, "dsf top-k selection">;
def Dsf_PoolValue : Type<CPred<"::llvm::isa<::mlir::dsf::PoolType>($_self)">, "dsf candidate pool">;
def Dsf_QTensorValue : Type<CPred<"::llvm::isa<::mlir::dsf::QTensorType>($_self)">, "dsf packed tensor">;
def Dsf_StoredValue : AnyTypeOf<[Dsf_F32Tensor, Dsf_QTensorValue]>;

class Dsf_WeightOp<string mnemonic, list<Trait> traits = []>
    : Dsf_Op<mnemonic, !listconcat(traits, [Pure,
        DeclareOpInterfaceMethods<Dsf_WeightUserOpInterface>])>;

//===----------------------------------------------------------------------===//
// Structure
//===----------------------------------------------------------------------===//

def Dsf_ModelOp : Dsf_Op<"model", [Symbol, SymbolTable, IsolatedFromAbove,
    NoTerminator, SingleBlock, NoRegionArguments]> {
  let summary = "a whole model: weight declarations and entry points";
  let description = [{
    Holds the `dsf.weight` declarations and the `func.func` entry points of one
    model. `family` is `deepseek_v4` or `deepseek_v41`; for V4.1,
    `decoder_start` is the first layer of the decoder (layers before it form
    the encoder). `schedule` is the CSA2 schedule the model is meant to run
    (the config's, or the user's; see dsf-schedule-csa2) and `candidate_pool`
    = [source layer, blocks, block size] the hierarchical indexer's setting
    (see dsf-hierarchical-indexer); both are read by passes. The region verifier checks what no single op can: layers in
    order, weight uses against declarations, and the CSA2 sharing rules (a
    consumer reads a producer of its own ratio; a Reuse layer reads the cache
    of a Full layer and the selection of the nearest preceding index source).

    ```mlir
    dsf.model @tiny attributes {family = "deepseek_v41", vocab_size = 512,
        hidden_size = 128, num_layers = 8, hc_mult = 4, decoder_start = 4} {
      dsf.weight @"embed.weight" : tensor<512x128xf32>
      func.func @forward(%ids: tensor<?xi32>, %pos: tensor<?xi32>) -> tensor<?x512xf32> { ... }
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, StrAttr:$family,
      I64Attr:$vocab_size, I64Attr:$hidden_size, I64Attr:$num_layers,
      I64Attr:$hc_mult, OptionalAttr<I64Attr>:$decoder_start,
      OptionalAttr<StrAttr>:$schedule, OptionalAttr<DenseI64ArrayAttr>:$candidate_pool);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    bool isV41() { return getFamily() == "deepseek_v41"; }
  }];
}

def Dsf_WeightDeclOp : Dsf_Op<"weight", [Symbol, HasParent<"ModelOp">]> {
  let summary = "declares one named parameter tensor of the model";
  let description = [{
    The symbol is the parameter's name in the released checkpoint. `type` is
    its logical shape (f32/bf16 element type, or i32 for routing tables);
    `format`, when present, is how the checkpoint stores it (FP8 with 2-D
    UE8M0 blocks, MXFP4, ...). Routed experts are declared stacked, one
    tensor `[E, ...]` per layer and projection; `expert_names` gives the
    per-expert checkpoint name with `{e}` standing for the expert index.
    `value`, when present, is the weight's contents (tests, small constants);
    lowering then makes it a constant instead of an argument the runtime binds.

    ```mlir
    dsf.weight @"layers.2.attn.wq_a.weight" : tensor<1280x5120xbf16>
        {format = #dsf.quant<e4m3, scale = ue8m0, block = 32x32>}
    dsf.weight @"layers.2.ffn.experts.w1.weight" : tensor<384x2304x5120xbf16>
        {format = #dsf.quant<e2m1, scale = ue8m0, block = 32>,
         expert_names = "layers.2.ffn.experts.{e}.w1.weight"}
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, TypeAttrOf<AnyStaticShapeTensor>:$type,
      OptionalAttr<Dsf_QuantAttr>:$format, OptionalAttr<StrAttr>:$expert_names,
      OptionalAttr<ElementsAttr>:$value);
  let assemblyFormat = "$sym_name `:` $type attr-dict";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::RankedTensorType getTensorType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getType());
    }
    /// Bytes the checkpoint stores for this tensor.
    int64_t getStoredBytes();
  }];
}

def Dsf_LayerOp : Dsf_Op<"layer", [IsolatedFromAbove,
    SingleBlockImplicitTerminator<"YieldOp">, RecursiveMemoryEffects]> {
  let summary = "one decoder block (attention + MoE sub-blocks with their mHC)";
  let description = [{
    A layer of the model. Its operands are what it reads from outside (the
    residual streams, the shifted collapse weights, token positions and ids,
    and shared caches / selections / pools of earlier layers); its region's
    arguments are those values, and `dsf.yield` returns the new streams and
    whatever this layer shares with later ones.

    * `attention`: `sliding` (ratio 0), `csa` / `hca` (V4), `csa2` (V4.1).
    * `mode` (csa2 layers only): `full` computes the compressed KV and index
      keys of its group and its own top-k; `reindex` rescoring shared index
      keys with its own query (inside the candidate pool when one is given);
      `reuse` reads both the cache and the selection of earlier layers.
    * `stage` (V4.1): encoder or decoder half.
    * `part` (after dsf-hoist-decoder-kv): a Full layer split in two; the `kv`
      part computes the compressor, index keys and window over every token and
      yields them, the `rest` part (same index, right after it) reads them and
      runs the queries, indexer, attention and MoE over fewer tokens.

    ```mlir
    %X9, %pre9 = dsf.layer 9 (%X8, %pre8, %pos, %ckv, %top) {attention = #dsf.attention<csa2>,
        mode = #dsf.csa2_mode<reuse>, ratio = 2, stage = #dsf.stage<encoder>}
        : (...) -> (tensor<?x4x5120xf32>, tensor<?x4xf32>) {
    ^bb0(...):
      ...
      dsf.yield %X, %pre : tensor<?x4x5120xf32>, tensor<?x4xf32>
    }
    ```
  }];
  let arguments = (ins I64Attr:$index, Dsf_AttentionKindAttr:$attention,
      I64Attr:$ratio, OptionalAttr<Dsf_Csa2ModeAttr>:$mode,
      OptionalAttr<Dsf_StageAttr>:$stage, OptionalAttr<Dsf_LayerPartAttr>:$part,
      Variadic<AnyType>:$inputs);
  let results = (outs Variadic<AnyType>:$outputs);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $index `(` $inputs `)` attr-dict `:` functional-type($inputs, $outputs) $body
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [OpBuilder<(ins "::mlir::TypeRange":$outputs, "int64_t":$index,
      "::mlir::dsf::AttentionKind":$attention, "int64_t":$ratio,
      "std::optional<::mlir::dsf::Csa2Mode>":$mode,
      "std::optional<::mlir::dsf::Stage>":$stage, "::mlir::ValueRange":$inputs)>];
  let extraClassDeclaration = [{
    bool isCompressed() { return getRatio() > 0; }
    ::mlir::Block &getBodyBlock() { return getBody().front(); }
  }];
}

def Dsf_YieldOp : Dsf_Op<"yield", [Pure, Terminator, ReturnLike, HasParent<"LayerOp">]> {
  let summary = "returns a layer's outputs";
  let description = [{
    ```mlir
    dsf.yield %X, %pre : tensor<?x4x128xf32>, tensor<?x4xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
  let builders = [OpBuilder<(ins), [{ /* empty yield */ }]>];
}

//===----------------------------------------------------------------------===//
// Embedding, norms, projections, rope
//===----------------------------------------------------------------------===//

def Dsf_EmbedOp : Dsf_WeightOp<"embed"> {
  let summary = "token embedding lookup";
  let description = [{
    `result[t] = weight[ids[t]]`; the weight is `[vocab, D]`.

    ```mlir
    %e = dsf.embed %ids weight(@"embed.weight") : tensor<?xi32> -> tensor<?x5120xf32>
    ```
  }];
  let arguments = (ins Dsf_IdTensor:$ids, FlatSymbolRefAttr:$weight);
  let results = (outs Dsf_F32Tensor:$result);
  let assemblyFormat = "$ids `weight` `(` $weight `)` attr-dict `:` type($ids) `->` type($result)";
  let hasVerifier = 1;
}

def Dsf_RmsNormOp : Dsf_WeightOp<"rms_norm", [AllTypesMatch<["input", "result"]>]> {
  let summary = "RMSNorm over the last dimension, weighted or not, in fp32";
  let description = [{
    `x · rsqrt(mean(x²) + eps) · weight` over the last dimension; without
    `weight` the scale is 1 (V4's per-head query norm). Applied to a
    `[?, H, d]` tensor it normalises each head separately.

    ```mlir
    %n = dsf.rms_norm %x weight(@"layers.0.attn_norm.weight") {eps = 1.0e-20 : f64} : tensor<?x5120xf32>
    %h = dsf.rms_norm %q {eps = 1.0e-06 : f64} : tensor<?x64x512xf32>
    ```
  }];
  let arguments = (ins Dsf_F32Tensor:$input, OptionalAttr<FlatSymbolRefAttr>:$weight,
                       F64Attr:$eps);
  let results = (outs Dsf_F32Tensor:$result);
  let assemblyFormat = "$input (`weight` `(` $weight^ `)`)? attr-dict `:` type($result)";
}

def Dsf_LinearOp : Dsf_WeightOp<"linear"> {
  let summary = "y = x · Wᵀ with W stored in its checkpoint format";
  let description = [{
    The weight is `[out, in]` (checkpoint layout). `in` is the product of the
    input's non-token dimensions and `out` the product of the result's, so a
    projection can produce heads directly (`[?, H, d]`). The storage format is
    the weight declaration's; the math is fp32.

    ```mlir
    %q = dsf.linear %qr weight(@"layers.2.attn.wq_b.weight") : tensor<?x1280xf32> -> tensor<?x64x512xf32>
    ```
  }];
  let arguments = (ins Dsf_F32Tensor:$input, FlatSymbolRefAttr:$weight);
  let results = (outs Dsf_F32Tensor:$result);
  let assemblyFormat = "$input `weight` `(` $weight `)` attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Dsf_GroupedLinearOp : Dsf_WeightOp<"grouped_linear"> {
  let summary = "grouped low-rank output projection (W_oa)";
  let description = [{
    Splits the `H` heads of `[?, H, d]` into `groups` contiguous groups and
    projects each group's `H/groups · d` channels with its own slice of the
    weight `[groups · r, H/groups · d]`, giving `[?, groups, r]`.

    ```mlir
    %oa = dsf.grouped_linear %o weight(@"layers.2.attn.wo_a.weight") {groups = 8 : i64}
        : tensor<?x64x512xf32> -> tensor<?x8x1024xf32>
    ```
  }];
  let arguments = (ins Dsf_F32Tensor:$input, FlatSymbolRefAttr:$weight, I64Attr:$groups);
  let results = (outs Dsf_F32Tensor:$result);
  let assemblyFormat = "$input `weight` `(` $weight `)` attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Dsf_RopeOp : Dsf_Op<"rope", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "rotary embedding (plain or YaRN, partial, interleaved, optionally inverse)";
  let description = [{
    Rotates interleaved pairs (2i, 2i+1) of the last `rope.dims` channels of
    each row by the angle of its position (`positions[t]` for row t).
    `inverse` rotates by the negative angle (V4's attention output, since
    V = K carries the keys' rotation).

    ```mlir
    %q = dsf.rope %q0, %pos {rope = #dsf.rope<theta = 1.000000e+04, dims = 64>}
        : tensor<?x64x512xf32>, tensor<?xi32>
    ```
  }];
  let arguments = (ins Dsf_F32Tensor:$input, Dsf_IdTensor:$positions,
                       Dsf_RopeAttr:$rope, UnitAttr:$inverse);
  let results = (outs Dsf_F32Tensor:$result);
  let assemblyFormat = "$input `,` $positions attr-dict `:` type($input) `,` type($positions)";
  let hasVerifier = 1;
}

def Dsf_TakeLastOp : Dsf_Op<"take_last", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "the last `count` rows of a token-major tensor (all of them when fewer)";
  let description = [{
    Restricts a computation to the last tokens of a prefill: dsf-hoist-decoder-kv
    runs the decoder after its first Full layer over the last W + (L−1)(W−1)
    tokens (exact tail) or W tokens (bounded replay).

    ```mlir
    %tail = dsf.take_last %pos {count = 2541 : i64} : tensor<?xi32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$count);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Dsf_EntryPositionsOp : Dsf_Op<"entry_positions", [Pure, AllTypesMatch<["positions", "result"]>]> {
  let summary = "positions of compressed entries: the first token of each group";
  let description = [{
    For a cache of ratio r, entry j stands for tokens [r·j, r·j + r) and is
    rotated at position r·j. Given the (consecutive) positions of a call's
    tokens, yields one position per group those tokens complete: with p₀ the
    first position and N tokens, entries p₀ div r up to (p₀ + N) div r.

    ```mlir
    %epos = dsf.entry_positions %pos {ratio = 2 : i64} : tensor<?xi32>
    ```
  }];
  let arguments = (ins Dsf_IdTensor:$positions, I64Attr:$ratio);
  let results = (outs Dsf_IdTensor:$result);
  let assemblyFormat = "$positions attr-dict `:` type($positions)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// mHC: manifold-constrained hyper-connections over n residual streams
//===----------------------------------------------------------------------===//

def Dsf_HcExpandOp : Dsf_Op<"mhc.expand", [Pure]> {
  let summary = "n copies of the embedding as residual streams, and the initial collapse weights";
  let description = [{
    `streams[t, j] = x[t]` for each of the n streams; `pre[t] = one-hot(0)`,
    the collapse weights V4.1 uses before any site has computed its own.

    ```mlir
    %X, %pre = dsf.mhc.expand %e : tensor<?x5120xf32> -> tensor<?x4x5120xf32>, tensor<?x4xf32>
    ```
  }];
  let arguments = (ins Dsf_F32Tensor:$input);
  let results = (outs Dsf_F32Tensor:$streams, Dsf_F32Tensor:$pre);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($streams) `,` type($pre)";
  let hasVerifier = 1;
}

def Dsf_HcCoeffsOp : Dsf_WeightOp<"mhc.coeffs"> {
  let summary = "mHC coefficient prediction: pre, post and the Sinkhorn-normalised comb";
  let description = [{
    f = X flattened to n·D, mix = (f · fnᵀ) · rsqrt(mean(f²) + norm_eps) split
    into [n | n | n²]; pre = sigmoid(mix₀·scale₀ + base₀) + eps;
    post = 2·sigmoid(mix₁·scale₁ + base₁); comb = softmax_row(mix₂·scale₂ +
    base₂) + eps, column-normalised, then `sinkhorn_iters − 1` rounds of row
    and column normalisation. Weights: fn `[(2+n)n, nD]`, base `[(2+n)n]`,
    scale `[3]`.

    ```mlir
    %pre, %post, %comb = dsf.mhc.coeffs %X {fn = @"layers.0.hc_attn_fn",
        base = @"layers.0.hc_attn_base", scale = @"layers.0.hc_attn_scale",
        sinkhorn_iters = 20 : i64, eps = 1.0e-06 : f64, norm_eps = 1.0e-20 : f64}
        : tensor<?x4x5120xf32> -> tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4x4xf32>
    ```
  }];
  let arguments = (ins Dsf_F32Tensor:$streams, FlatSymbolRefAttr:$fn,
      FlatSymbolRefAttr:$base, FlatSymbolRefAttr:$scale, I64Attr:$sinkhorn_iters,
      F64Attr:$eps, F64Attr:$norm_eps);
  let results = (outs Dsf_F32Tensor:$pre, Dsf_F32Tensor:$post, Dsf_F32Tensor:$comb);
  let assemblyFormat = "$streams attr-dict `:` type($streams) `->` type($pre) `,` type($post) `,` type($comb)";
  let hasVerifier = 1;
}

def Dsf_HcCollapseOp : Dsf_Op<"mhc.collapse", [Pure]> {
  let summary = "block input x = Σⱼ preⱼ · Xⱼ";
  let description = [{
    In V4 `pre` comes from the same site's coefficients; in V4.1 from the
    previous site (the single-pass form), which the dataflow shows.

    ```mlir
    %x = dsf.mhc.collapse %X, %pre : tensor<?x4x5120xf32>, tensor<?x4xf32> -> tensor<?x5120xf32>
    ```
  }];
  let arguments = (ins Dsf_F32Tensor:$streams, Dsf_F32Tensor:$pre);
  let results = (outs Dsf_F32Tensor:$result);
  let assemblyFormat = "$streams `,` $pre attr-dict `:` type($streams) `,` type($pre) `->` type($result)";
  let hasVerifier = 1;
}

def Dsf_HcUpdateOp : Dsf_Op<"mhc.update", [Pure]> {
  let summary = "residual update X'ₖ = postₖ · F + Σⱼ comb[j,k] · Xⱼ";
  let description = [{
    ```mlir
    %X2 = dsf.mhc.update %X, %y, %post, %comb
        : tensor<?x4x5120xf32>, tensor<?x5120xf32>, tensor<?x4xf32>, tensor<?x4x4xf32> -> tensor<?x4x5120xf32>
    ```
  }];
  let arguments = (ins Dsf_F32Tensor:$streams, Dsf_F32Tensor:$block_output,
                       Dsf_F32Tensor:$post, Dsf_F32Tensor:$comb);
  let results = (outs Dsf_F32Tensor:$result);
  let assemblyFormat = [{
    $streams `,` $block_output `,` $post `,` $comb attr-dict `:` type($streams) `,`
    type($block_output) `,` type($post) `,` type($comb) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Dsf_HcHeadOp : Dsf_WeightOp<"mhc.head"> {
  let summary = "V4's HC head: collapse the streams with their own sigmoid weights";
  let description = [{
    pre = sigmoid((RMS(X) · fnᵀ) · scale + base) + eps, h = Σⱼ preⱼ Xⱼ.
    Weights: fn `[n, nD]`, base `[n]`, scale `[1]`.

    ```mlir
    %h = dsf.mhc.head %X {fn = @hc_head_fn, base = @hc_head_base, scale = @hc_head_scale,
        eps = 1.0e-06 : f64, norm_eps = 1.0e-06 : f64} : tensor<?x4x4096xf32> -> tensor<?x4096xf32>
    ```
  }];
  let arguments = (ins Dsf_F32Tensor:$streams, FlatSymbolRefAttr:$fn,
      FlatSymbolRefAttr:$base, FlatSymbolRefAttr:$scale, F64Attr:$eps, F64Attr:$norm_eps);
  let results = (outs Dsf_F32Tensor:$result);
  let assemblyFormat = "$streams attr-dict `:` type($streams) `->` type($result)";
  let hasVerifier = 1;
}

def Dsf_HcFusedUpdateOp : Dsf_WeightOp<"mhc.fused_update"> {
  let summary = "residual update, next coefficients and next input collapse in one pass";
  let description = [{
    What dsf-fuse-mhc makes of a site: X' = update(X, block_output, post,
    comb) as dsf.mhc.update, then the coefficients of the next site over X'
    (as dsf.mhc.coeffs with fn/base/scale) and, when `collapse` is given, the
    next block's input Σⱼ collapse_preⱼ X'ⱼ — one pass over the n streams: the
    projection and the sum of squares accumulate while X' is written, the small
    sigmoid / softmax / Sinkhorn runs at the end. V4.1 collapses with the
    previous site's pre, so the collapse needs nothing this op computes; V4
    collapses with the coefficients computed here, so its collapse stays a
    separate op.

    ```mlir
    %X2, %pre, %post, %comb, %x = dsf.mhc.fused_update %X, %y, %p0, %c0 collapse(%a_pre)
        {fn = @"layers.2.hc_ffn_fn", base = @"layers.2.hc_ffn_base", scale = @"layers.2.hc_ffn_scale",
         sinkhorn_iters = 20 : i64, eps = 1.0e-06 : f64, norm_eps = 1.0e-20 : f64}
        : tensor<?x4x5120xf32>, tensor<?x5120xf32>, tensor<?x4xf32>, tensor<?x4x4xf32>, tensor<?x4xf32>
        -> tensor<?x4x5120xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4x4xf32>, tensor<?x5120xf32>
    ```
  }];
  let arguments = (ins Dsf_F32Tensor:$streams, Dsf_F32Tensor:$block_output,
      Dsf_F32Tensor:$post, Dsf_F32Tensor:$comb, Optional<Dsf_F32Tensor>:$collapse_pre,
      FlatSymbolRefAttr:$fn, FlatSymbolRefAttr:$base, FlatSymbolRefAttr:$scale,
      I64Attr:$sinkhorn_iters, F64Attr:$eps, F64Attr:$norm_eps);
  let results = (outs Dsf_F32Tensor:$updated, Dsf_F32Tensor:$next_pre, Dsf_F32Tensor:$next_post,
      Dsf_F32Tensor:$next_comb, Optional<Dsf_F32Tensor>:$collapsed);
  let assemblyFormat = [{
    $streams `,` $block_output `,` $post `,` $comb (`collapse` `(` $collapse_pre^ `)`)? attr-dict
    `:` type($streams) `,` type($block_output) `,` type($post) `,` type($comb)
    (`,` type($collapse_pre)^)? `->` type($updated) `,` type($next_pre) `,` type($next_post) `,`
    type($next_comb) (`,` type($collapsed)^)?
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Compressed caches, windows, quantization
//===----------------------------------------------------------------------===//

def Dsf_CompressOp : Dsf_WeightOp<"compress"> {
  let summary = "token compressor: one normalised latent per `ratio` tokens";
  let description = [{
    * `overlap` (V4 CSA, ratio m): wkv and wgate give 2W channels (halves Ca,
      Cb); entry w pools Ca of window w−1 and Cb of window w with
      softmax(Z + ape) over the 2m slots; ape is `[m, 2W]`.
    * `pool` (V4 HCA, ratio m′): softmax(Z + ape) pooling over disjoint
      windows of m′ tokens; ape is `[m′, W]`.
    * `pair` (V4.1, ratio 2): softmax(Z) pooling over [2j, 2j+1], no ape.
    * `project` (V4.1, ratio 1): latent = x · W_kv; no gate, no pooling.
    Every kind ends with RMS_w(· ; norm). A partial last group emits nothing.

    A sequence compressed over several calls carries rows from one call to
    the next: with a `carry_out` result the op also yields the input rows that
    later entries still need (the open group's pending rows and, for
    `overlap`, the last complete window before them); `carry` feeds them back
    in front of the next call's rows. The first carried row starts a group.
    (The carry holds input rows rather than their projections so that every
    kind carries the same thing; the projections of a row do not depend on
    the other rows, so recomputing them is exact.)

    ```mlir
    %lat = dsf.compress %x {kind = #dsf.compressor<pair>, ratio = 2 : i64,
        wkv = @"layers.2.attn.compressor.wkv.weight", wgate = @"layers.2.attn.compressor.wgate.weight",
        norm = @"layers.2.attn.compressor.norm.weight", eps = 1.0e-20 : f64}
        : tensor<?x5120xf32> -> tensor<?x512xf32>
    ```
  }];
  let arguments = (ins Dsf_F32Tensor:$input, Optional<Dsf_F32Tensor>:$carry, Dsf_CompressorKindAttr:$kind,
      I64Attr:$ratio, FlatSymbolRefAttr:$wkv, OptionalAttr<FlatSymbolRefAttr>:$wgate,
      OptionalAttr<FlatSymbolRefAttr>:$ape, FlatSymbolRefAttr:$norm, F64Attr:$eps);
  let results = (outs Dsf_F32Tensor:$result, Optional<Dsf_F32Tensor>:$carry_out);
  let assemblyFormat = [{
    $input (`carry` `(` $carry^ `:` type($carry) `)`)? attr-dict `:` type($input) `->` type($result)
    (`,` type($carry_out)^)?
  }];
  let hasVerifier = 1;
}

def Dsf_QuantizeOp : Dsf_Op<"quantize", [Pure]> {
  let summary = "quantize to a block-scaled format (bit-exact rounding rules of MODEL.md)";
  let description = [{
    Rounds each block of the last dimension to the result's `#dsf.quant`
    format: UE8M0 scales are powers of two from the block's amax, E4M3
    scales are RNE-rounded, elements RNE with ties to even after clamping.

    ```mlir
    %q = dsf.quantize %x : tensor<?x512xf32> -> !dsf.qtensor<?x512, #dsf.quant<e2m1, scale = e4m3, block = 16>>
    ```
  }];
  let arguments = (ins Dsf_F32Tensor:$input);
  let results = (outs Dsf_QTensorValue:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` qualified(type($result))";
  let hasVerifier = 1;
}

def Dsf_DequantizeOp : Dsf_Op<"dequantize", [Pure]> {
  let summary = "element × scale back to f32";
  let description = [{
    ```mlir
    %x = dsf.dequantize %q : !dsf.qtensor<?x128, #dsf.quant<e2m1, scale = ue8m0, block = 32>> -> tensor<?x128xf32>
    ```
  }];
  let arguments = (ins Dsf_QTensorValue:$input);
  let results = (outs Dsf_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` qualified(type($input)) `->` type($result)";
  let hasVerifier = 1;
}

def Dsf_CacheWriteOp : Dsf_Op<"cache.write", [Pure]> {
  let summary = "materializes a layer-shared global cache from its entries";
  let description = [{
    The entries (one row per compressed entry) become a cache value that later
    layers of the same ratio read. With `after %prior` (a sequence continued
    over several calls), the cache is the prior cache's entries followed by
    these. A quantized cache format takes a packed
    tensor of the same format; a plain one takes the f32 rows.

    ```mlir
    %ckv = dsf.cache.write %q : !dsf.qtensor<?x512, #dsf.quant<e2m1, scale = e4m3, block = 16>>
        -> !dsf.cache<kv, ratio = 2, width = 512, #dsf.quant<e2m1, scale = e4m3, block = 16>>
    ```
  }];
  let arguments = (ins Dsf_StoredValue:$entries, Optional<Dsf_CacheValue>:$prior);
  let results = (outs Dsf_CacheValue:$cache);
  let assemblyFormat = [{
    $entries (`after` $prior^ `:` qualified(type($prior)))? attr-dict `:` type($entries) `->` qualified(type($cache))
  }];
  let hasVerifier = 1;
}

def Dsf_WindowWriteOp : Dsf_Op<"window.write", [Pure]> {
  let summary = "a layer's own sliding-window K = V";
  let description = [{
    The rows of this call's tokens, after `%prior` (the rows an earlier call
    left, see dsf.window.retain) when the sequence continues.

    ```mlir
    %win = dsf.window.write %kvq : !dsf.qtensor<?x512, #dsf.quant<e4m3, scale = ue8m0, block = 32>>
        -> !dsf.window<size = 128, width = 512, #dsf.quant<e4m3, scale = ue8m0, block = 32>>
    ```
  }];
  let arguments = (ins Dsf_StoredValue:$rows, Optional<Dsf_WindowValue>:$prior);
  let results = (outs Dsf_WindowValue:$window);
  let assemblyFormat = [{
    $rows (`after` $prior^ `:` qualified(type($prior)))? attr-dict `:` type($rows) `->` qualified(type($window))
  }];
  let hasVerifier = 1;
}

def Dsf_WindowRetainOp : Dsf_Op<"window.retain", [Pure, AllTypesMatch<["window", "result"]>]> {
  let summary = "what a window keeps for the next call: its last size - 1 rows";
  let description = [{
    The next token's window is its own row and the size - 1 rows before it,
    so a sequence's window state between calls is a ring of size - 1 rows.

    ```mlir
    %kept = dsf.window.retain %win : !dsf.window<size = 128, width = 512, #fp8>
    ```
  }];
  let arguments = (ins Dsf_WindowValue:$window);
  let results = (outs Dsf_WindowValue:$result);
  let assemblyFormat = "$window attr-dict `:` qualified(type($window))";
}

//===----------------------------------------------------------------------===//
// Indexer and attention
//===----------------------------------------------------------------------===//

def Dsf_IndexTopkOp : Dsf_Op<"index_topk", [Pure, AttrSizedOperandSegments]> {
  let summary = "lightning-indexer scores and top-k, optionally within a pool, optionally making one";
  let description = [{
    I[p, j] = scale · Σₕ weights[p, h] · ReLU(queries[p, h] · keys[j]) for
    entries j visible to p (j < (p+1) div ratio), and, with `within`, only for
    entries of pool[p]. Selects the top `k` (ascending indices, −1 where fewer
    are visible). With a second result it also forms the candidate pool from
    the same scores: blocks of `block_size` entries scored by their max, the
    newest visible block always kept, the best `blocks` blocks.
    `at(%pos)` gives the queries' positions; without it the queries are the
    last tokens of a sequence that starts at position 0 (the key count says
    where).

    ```mlir
    %top, %pool = dsf.index_topk %qi, %w, %ik {k = 512 : i64, scale = 0.0156 : f64}
        : tensor<?x32x128xf32>, tensor<?x32xf32>, !dsf.cache<index_keys, ratio = 1, width = 128, #mxfp4>
        -> !dsf.topk<k = 512, ratio = 1>, !dsf.pool<blocks = 2048, block_size = 8, ratio = 1>
    %top2 = dsf.index_topk %qi2, %w2, %ik within %pool {k = 512 : i64, scale = 0.0156 : f64}
        : tensor<?x32x128xf32>, tensor<?x32xf32>, !dsf.cache<...>, !dsf.pool<...> -> !dsf.topk<k = 512, ratio = 1>
    ```
  }];
  let arguments = (ins Dsf_F32Tensor:$queries, Dsf_F32Tensor:$weights,
      Dsf_CacheValue:$keys, Optional<Dsf_PoolValue>:$within, Optional<Dsf_IdTensor>:$positions,
      I64Attr:$k, F64Attr:$scale);
  let results = (outs Dsf_TopkValue:$selection, Optional<Dsf_PoolValue>:$candidate_pool);
  let assemblyFormat = [{
    $queries `,` $weights `,` $keys (`within` $within^)? (`at` `(` $positions^ `:` type($positions) `)`)?
    attr-dict `:` type($queries) `,`
    type($weights) `,` qualified(type($keys)) (`,` qualified(type($within))^)? `->`
    qualified(type($selection)) (`,` qualified(type($candidate_pool))^)?
  }];
  let hasVerifier = 1;
}

def Dsf_AttentionOp : Dsf_WeightOp<"attention", [AttrSizedOperandSegments]> {
  let summary = "sink attention over the window and (optionally selected) compressed entries";
  let description = [{
    One softmax per query and head over [window logits | compressed logits |
    sink]: keys are the layer's window (the last `window.size` positions, the
    query's own included) and, when a cache is given, its visible entries
    (all of them, or only those `selection` picks). K = V; scale is applied
    to the logits; the sink adds e^{sink_h} to the denominator only. The
    queries are the window's last rows. `at(%pos)` gives their positions,
    which say which cache entries are visible; without it the window holds
    the whole sequence from position 0.

    ```mlir
    %o = dsf.attention %q, %win, %ckv [%top] sink(@"layers.2.attn.attn_sink") {scale = 0.0442 : f64}
        : tensor<?x64x512xf32>, !dsf.window<...>, !dsf.cache<kv, ...>, !dsf.topk<k = 512, ratio = 2>
        -> tensor<?x64x512xf32>
    ```
  }];
  let arguments = (ins Dsf_F32Tensor:$queries, Dsf_WindowValue:$window,
      Optional<Dsf_CacheValue>:$cache, Optional<Dsf_TopkValue>:$selection,
      Optional<Dsf_IdTensor>:$positions, FlatSymbolRefAttr:$sink, F64Attr:$scale);
  let results = (outs Dsf_F32Tensor:$result);
  let assemblyFormat = [{
    $queries `,` $window (`,` $cache^)? (`[` $selection^ `]`)? (`at` `(` $positions^ `:` type($positions) `)`)?
    `sink` `(` $sink `)` attr-dict
    `:` type($queries) `,` qualified(type($window)) (`,` qualified(type($cache))^)?
    (`,` qualified(type($selection))^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// MoE
//===----------------------------------------------------------------------===//

def Dsf_MoeGateOp : Dsf_WeightOp<"moe.gate", [AttrSizedOperandSegments]> {
  let summary = "router: sqrt-softplus scores, bias-corrected or hash-table top-k";
  let description = [{
    s = sqrt(softplus(x · Wᵀ)) in fp32. With `hash_table` (V4's first layers)
    the experts of token t are `hash_table[ids[t]]`; otherwise the top
    `top_k` of s + bias (the bias only selects; with `bias_vl` and an image
    mask, image tokens use `bias_vl`). Weights are s[sel] / (Σ s[sel] + 1e-20)
    · routed_scale.

    ```mlir
    %w, %e = dsf.moe.gate %x image(%img : tensor<?xi1>) {weight = @"layers.2.ffn.gate.weight",
        bias = @"layers.2.ffn.gate.bias", bias_vl = @"layers.2.ffn.gate.bias_vl",
        top_k = 6 : i64, routed_scale = 1.5 : f64} : tensor<?x5120xf32> -> tensor<?x6xf32>, tensor<?x6xi32>
    ```
  }];
  let arguments = (ins Dsf_F32Tensor:$input, Optional<Dsf_IdTensor>:$token_ids,
      Optional<Dsf_MaskTensor>:$image_mask, FlatSymbolRefAttr:$weight,
      OptionalAttr<FlatSymbolRefAttr>:$bias, OptionalAttr<FlatSymbolRefAttr>:$bias_vl,
      OptionalAttr<FlatSymbolRefAttr>:$hash_table, I64Attr:$top_k, F64Attr:$routed_scale);
  let results = (outs Dsf_F32Tensor:$routing_weights, RankedTensorOf<[I32]>:$experts);
  let assemblyFormat = [{
    $input (`ids` `(` $token_ids^ `:` type($token_ids) `)`)?
    (`image` `(` $image_mask^ `:` type($image_mask) `)`)? attr-dict `:` type($input) `->`
    type($routing_weights) `,` type($experts)
  }];
  let hasVerifier = 1;
}

def Dsf_MoeExpertsOp : Dsf_WeightOp<"moe.experts"> {
  let summary = "routed experts with clamped SwiGLU, weighted sum in fp32";
  let description = [{
    y = Σₖ W2[eₖ](wₖ · silu(min(W1[eₖ]x, limit)) ⊙ clamp(W3[eₖ]x, ±limit)).
    Weights stacked over experts: w1, w3 `[E, I, D]`, w2 `[E, D, I]`.

    ```mlir
    %r = dsf.moe.experts %x, %w, %e {w1 = @"layers.2.ffn.experts.w1.weight",
        w2 = @"layers.2.ffn.experts.w2.weight", w3 = @"layers.2.ffn.experts.w3.weight",
        swiglu_limit = 10.0 : f64} : tensor<?x5120xf32>, tensor<?x6xf32>, tensor<?x6xi32> -> tensor<?x5120xf32>
    ```
  }];
  let arguments = (ins Dsf_F32Tensor:$input, Dsf_F32Tensor:$routing_weights,
      RankedTensorOf<[I32]>:$experts, FlatSymbolRefAttr:$w1, FlatSymbolRefAttr:$w2,
      FlatSymbolRefAttr:$w3, F64Attr:$swiglu_limit);
  let results = (outs Dsf_F32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $routing_weights `,` $experts attr-dict `:` type($input) `,`
    type($routing_weights) `,` type($experts) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Dsf_FfnOp : Dsf_WeightOp<"ffn", [AllTypesMatch<["input", "result"]>]> {
  let summary = "a dense clamped-SwiGLU feed-forward (the shared expert)";
  let description = [{
    y = W2(silu(min(W1x, limit)) ⊙ clamp(W3x, ±limit)); w1, w3 `[I, D]`, w2 `[D, I]`.

    ```mlir
    %s = dsf.ffn %x {w1 = @"layers.2.ffn.shared_experts.w1.weight", w2 = @"layers.2.ffn.shared_experts.w2.weight",
        w3 = @"layers.2.ffn.shared_experts.w3.weight", swiglu_limit = 10.0 : f64} : tensor<?x5120xf32>
    ```
  }];
  let arguments = (ins Dsf_F32Tensor:$input, FlatSymbolRefAttr:$w1,
      FlatSymbolRefAttr:$w2, FlatSymbolRefAttr:$w3, F64Attr:$swiglu_limit);
  let results = (outs Dsf_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Dsf_AddOp : Dsf_Op<"add", [Pure, Commutative, AllTypesMatch<["lhs", "rhs", "result"]>]> {
  let summary = "elementwise sum";
  let description = [{
    ```mlir
    %m = dsf.add %r, %s : tensor<?x5120xf32>
    ```
  }];
  let arguments = (ins Dsf_F32Tensor:$lhs, Dsf_F32Tensor:$rhs);
  let results = (outs Dsf_F32Tensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

#endif // DSF_OPS_TD
