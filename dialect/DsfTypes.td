//===- DsfTypes.td - dsf types -----------------------------*- tablegen -*-===//
#ifndef DSF_TYPES_TD
#define DSF_TYPES_TD

include "dialect/DsfAttrs.td"
include "mlir/IR/BuiltinTypeInterfaces.td"

class Dsf_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Dsf_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def Dsf_CacheType : Dsf_Type<"Cache", "cache"> {
  let summary = "a layer-shared global cache: compressed KV or index keys";
  let description = [{
    The global (compressed) cache a Full layer produces and later layers of the
    same ratio read: one entry per `ratio` tokens, `width` channels per entry,
    stored in `format`. Its bytes per token are `format.rowBytes(width) / ratio`.

    ```mlir
    !dsf.cache<kv, ratio = 2, width = 512, #dsf.quant<e2m1, scale = e4m3, block = 16>>
    !dsf.cache<index_keys, ratio = 1, width = 128, #dsf.quant<e2m1, scale = ue8m0, block = 32>>
    ```
  }];
  let parameters = (ins "::mlir::dsf::CacheKind":$kind, "int64_t":$ratio,
                        "int64_t":$width, "::mlir::dsf::QuantAttr":$format);
  let assemblyFormat = "`<` $kind `,` `ratio` `=` $ratio `,` `width` `=` $width `,` qualified($format) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    int64_t getEntryBytes() const { return getFormat().getRowBytes(getWidth()); }
  }];
}

def Dsf_WindowType : Dsf_Type<"Window", "window"> {
  let summary = "a layer's own sliding-window K = V ring";
  let description = [{
    The last `size` positions of one layer's K = V (the query's own position
    included), `width` channels each, stored in `format`. Per sequence it holds
    `size · format.rowBytes(width)` bytes whatever the context length.

    ```mlir
    !dsf.window<size = 128, width = 512, #dsf.quant<e4m3, scale = ue8m0, block = 32>>
    ```
  }];
  let parameters = (ins "int64_t":$size, "int64_t":$width,
                        "::mlir::dsf::QuantAttr":$format);
  let assemblyFormat = "`<` `size` `=` $size `,` `width` `=` $width `,` qualified($format) `>`";
  let genVerifyDecl = 1;
}

def Dsf_TopkType : Dsf_Type<"Topk", "topk"> {
  let summary = "per-query selection of `k` entries of a ratio-`ratio` cache";
  let description = [{
    For each query token, the indices of the `k` selected entries of a global
    cache of the same ratio, ascending, -1 for empty picks. Shared by Reuse
    layers as a value.

    ```mlir
    !dsf.topk<k = 512, ratio = 2>
    ```
  }];
  let parameters = (ins "int64_t":$k, "int64_t":$ratio);
  let assemblyFormat = "`<` `k` `=` $k `,` `ratio` `=` $ratio `>`";
  let genVerifyDecl = 1;
}

def Dsf_PoolType : Dsf_Type<"Pool", "pool"> {
  let summary = "per-query candidate pool: `blocks` blocks of `block_size` entries";
  let description = [{
    The candidate pool of the hierarchical indexer: for each query, the union
    of the `blocks` best blocks of `block_size` consecutive entries of a
    ratio-`ratio` cache (the block holding the newest visible entry always
    kept). Later index sources score only inside it.

    ```mlir
    !dsf.pool<blocks = 2048, block_size = 8, ratio = 1>
    ```
  }];
  let parameters = (ins "int64_t":$blocks, "int64_t":$block_size, "int64_t":$ratio);
  let assemblyFormat = "`<` `blocks` `=` $blocks `,` `block_size` `=` $block_size `,` `ratio` `=` $ratio `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    int64_t getCapacity() const { return getBlocks() * getBlockSize(); }
  }];
}

def Dsf_QTensorType : Dsf_Type<"QTensor", "qtensor"> {
  let summary = "a packed, block-scaled tensor: stored elements plus scales";
  let description = [{
    What `dsf.quantize` produces: a tensor of the given shape stored in a
    quantized `#dsf.quant` format (elements packed, one scale per block along
    the last dimension).

    ```mlir
    !dsf.qtensor<?x512, #dsf.quant<e2m1, scale = e4m3, block = 16>>
    ```
  }];
  let parameters = (ins ArrayRefParameter<"int64_t">:$shape,
                        "::mlir::dsf::QuantAttr":$format);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    int64_t getRank() const { return getShape().size(); }
  }];
}

#endif // DSF_TYPES_TD
