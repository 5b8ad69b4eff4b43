//===- DsfAttrs.td - dsf enums and attributes --------------*- tablegen -*-===//
#ifndef DSF_ATTRS_TD
#define DSF_ATTRS_TD

include "dialect/DsfDialect.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Dsf_Csa2Mode : I32EnumAttr<"Csa2Mode", "CSA2 role of a compressed V4.1 layer", [
    I32EnumAttrCase<"full", 0>, I32EnumAttrCase<"reindex", 1>,
    I32EnumAttrCase<"reuse", 2>]> {
  let cppNamespace = "::mlir::dsf";
  let genSpecializedAttr = 0;
}
def Dsf_Csa2ModeAttr : EnumAttr<Dsf_Dialect, Dsf_Csa2Mode, "csa2_mode"> {
  let summary = "CSA2 mode: full (computes shared KV), reindex (own top-k), reuse";
  let assemblyFormat = "`<` $value `>`";
}

def Dsf_AttentionKind : I32EnumAttr<"AttentionKind", "attention kind of a layer", [
    I32EnumAttrCase<"sliding", 0>,  // window only (V4 and V4.1)
    I32EnumAttrCase<"csa", 1>,      // V4: overlapping compressor + indexer
    I32EnumAttrCase<"hca", 2>,      // V4: heavy compressor, dense over entries
    I32EnumAttrCase<"csa2", 3>]> {  // V4.1: shared compressed KV with a mode
  let cppNamespace = "::mlir::dsf";
  let genSpecializedAttr = 0;
}
def Dsf_AttentionKindAttr : EnumAttr<Dsf_Dialect, Dsf_AttentionKind, "attention"> {
  let assemblyFormat = "`<` $value `>`";
}

def Dsf_Stage : I32EnumAttr<"Stage", "half of V4.1's causal encoder-decoder", [
    I32EnumAttrCase<"encoder", 0>, I32EnumAttrCase<"decoder", 1>]> {
  let cppNamespace = "::mlir::dsf";
  let genSpecializedAttr = 0;
}
def Dsf_StageAttr : EnumAttr<Dsf_Dialect, Dsf_Stage, "stage"> {
  let assemblyFormat = "`<` $value `>`";
}

def Dsf_CompressorKind : I32EnumAttr<"CompressorKind", "token compressor", [
    I32EnumAttrCase<"overlap", 0>,  // V4 CSA: windows of m overlap by half
    I32EnumAttrCase<"pool", 1>,     // V4 HCA: disjoint windows with position bias
    I32EnumAttrCase<"pair", 2>,     // V4.1 ratio 2: gated pairs, no position bias
    I32EnumAttrCase<"project", 3>]> { // V4.1 ratio 1: plain projection
  let cppNamespace = "::mlir::dsf";
  let genSpecializedAttr = 0;
}
def Dsf_CompressorKindAttr : EnumAttr<Dsf_Dialect, Dsf_CompressorKind, "compressor"> {
  let assemblyFormat = "`<` $value `>`";
}

def Dsf_ScalarFormat : I32EnumAttr<"ScalarFormat", "stored element format", [
    I32EnumAttrCase<"f32", 0>, I32EnumAttrCase<"bf16", 1>,
    I32EnumAttrCase<"e4m3", 2>, I32EnumAttrCase<"e2m1", 3>]> {
  let cppNamespace = "::mlir::dsf";
  let genSpecializedAttr = 0;
}
def Dsf_ScaleFormat : I32EnumAttr<"ScaleFormat", "stored block-scale format", [
    I32EnumAttrCase<"none", 0>, I32EnumAttrCase<"e4m3", 1>,
    I32EnumAttrCase<"ue8m0", 2>]> {
  let cppNamespace = "::mlir::dsf";
  let genSpecializedAttr = 0;
}
def Dsf_CacheKind : I32EnumAttr<"CacheKind", "what a layer-shared cache holds", [
    I32EnumAttrCase<"kv", 0>, I32EnumAttrCase<"index_keys", 1>]> {
  let cppNamespace = "::mlir::dsf";
  let genSpecializedAttr = 0;
}

def Dsf_LayerPart : I32EnumAttr<"LayerPart", "half of a split Full layer", [
    I32EnumAttrCase<"kv", 0>,     // compressor, index keys, window: over every token
    I32EnumAttrCase<"rest", 1>]> {// queries, indexer, attention, MoE: over the tail
  let cppNamespace = "::mlir::dsf";
  let genSpecializedAttr = 0;
}
def Dsf_LayerPartAttr : EnumAttr<Dsf_Dialect, Dsf_LayerPart, "layer_part"> {
  let assemblyFormat = "`<` $value `>`";
}

def Dsf_Tier : I32EnumAttr<"Tier", "where cache bytes live", [
    I32EnumAttrCase<"device", 0>, I32EnumAttrCase<"host", 1>,
    I32EnumAttrCase<"ssd", 2>, I32EnumAttrCase<"dropped", 3>]> {
  let cppNamespace = "::mlir::dsf";
  let genSpecializedAttr = 0;
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

class Dsf_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Dsf_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Dsf_QuantAttr : Dsf_Attr<"Quant", "quant"> {
  let summary = "a storage format: element format, block-scale format, block shape";
  let description = [{
    Describes how a tensor (weights) or a cache row (KV) is stored.

    ```mlir
    #dsf.quant<f32>                                     // plain
    #dsf.quant<bf16>
    #dsf.quant<e2m1, scale = e4m3, block = 16>          // NVFP4: 288 B per 512-wide row
    #dsf.quant<e2m1, scale = ue8m0, block = 32>         // MXFP4
    #dsf.quant<e4m3, scale = ue8m0, block = 32>         // V4.1 window FP8
    #dsf.quant<e4m3, scale = ue8m0, block = 32x32>      // V4.1 FP8 weights (2-D blocks)
    #dsf.quant<e4m3, scale = ue8m0, block = 64, bf16_tail = 64, align = 8>  // V4 KV row
    ```

    `block = C` is a 1-D block of C consecutive elements along the last
    dimension; `block = RxC` is a 2-D block over the last two dimensions.
    `bf16_tail = T` keeps the last T channels of a row in bf16 (V4 keeps the
    rope channels unquantized); `align = A` rounds a row's bytes up to a
    multiple of A. A row of width w occupies
    `ceil((w-T)·bits/8) + (w-T)/C·scale_bytes + 2T` bytes, rounded up to A.
  }];
  let parameters = (ins
    "::mlir::dsf::ScalarFormat":$element,
    "::mlir::dsf::ScaleFormat":$scale,
    "int64_t":$blockRows,
    "int64_t":$blockCols,
    "int64_t":$bf16Tail,
    "int64_t":$align);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Bits of one stored element.
    int64_t getElementBits() const;
    /// True when elements are stored in a low-precision format with scales.
    bool isQuantized() const { return getScale() != ScaleFormat::none; }
    /// Bytes of one cache row of `width` channels (1-D blocks only).
    int64_t getRowBytes(int64_t width) const;
    /// Bytes of a whole tensor of this shape (1-D or 2-D blocks; partial
    /// blocks at the edges get a scale each, as checkpoints store them).
    int64_t getTensorBytes(::llvm::ArrayRef<int64_t> shape) const;
    /// Checks that a row of `width` channels splits into whole blocks.
    ::mlir::LogicalResult verifyRowWidth(int64_t width,
        ::llvm::function_ref<::mlir::InFlightDiagnostic()> emitError) const;
    static QuantAttr getPlain(::mlir::MLIRContext *ctx, ScalarFormat element);
    static QuantAttr get1D(::mlir::MLIRContext *ctx, ScalarFormat element,
                           ScaleFormat scale, int64_t block);
  }];
}

def Dsf_RopeAttr : Dsf_Attr<"Rope", "rope"> {
  let summary = "rotary embedding parameters (plain or YaRN), on the last `dims` channels";
  let description = [{
    Interleaved-pair rotary embedding on the last `dims` channels of the last
    dimension, base `theta`; when `yarn_factor` is present the frequencies are
    YaRN-scaled (original context `original_max`, ramp `beta_fast`/`beta_slow`)
    with no attention-factor scaling, as V4 and V4.1 use it.

    ```mlir
    #dsf.rope<theta = 1.000000e+04, dims = 64>
    #dsf.rope<theta = 1.600000e+05, dims = 64, yarn_factor = 1.600000e+01,
              original_max = 65536, beta_fast = 3.200000e+01, beta_slow = 1.000000e+00>
    ```
  }];
  let parameters = (ins
    "::mlir::FloatAttr":$theta,
    "int64_t":$dims,
    OptionalParameter<"::mlir::FloatAttr">:$yarn_factor,
    OptionalParameter<"std::optional<int64_t>">:$original_max,
    OptionalParameter<"::mlir::FloatAttr">:$beta_fast,
    OptionalParameter<"::mlir::FloatAttr">:$beta_slow);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Dsf_CachePlanAttr : Dsf_Attr<"CachePlan", "cache_plan"> {
  let summary = "where a cache lives while its sequence is live and when it is idle";
  let description = [{
    `live`: the tier while the sequence runs; `idle`: where the cache goes when
    the sequence ends or pauses (`dropped`: nowhere); `ttl`: seconds it stays
    there. Written by dsf-plan-cache, carried by the artifact to the runtime.

    ```mlir
    #dsf.cache_plan<live = device, idle = ssd, ttl = 14400>   // global KV
    #dsf.cache_plan<live = device, idle = host, ttl = 300>    // a window
    ```
  }];
  let parameters = (ins "::mlir::dsf::Tier":$live, "::mlir::dsf::Tier":$idle, "int64_t":$ttl);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

#endif // DSF_ATTRS_TD
