//===- DsfDialect.td - the dsf dialect ---------------------*- tablegen -*-===//
#ifndef DSF_DIALECT_TD
#define DSF_DIALECT_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"

def Dsf_Dialect : Dialect {
  let name = "dsf";
  let cppNamespace = "::mlir::dsf";
  let summary = "DeepSeek-V4 family forward graphs: CSA2 modes, shared KV, FP4 caches, MoE, mHC";
  let description = [{
    The `dsf` dialect describes one forward pass of a DeepSeek-V4-family model
    (V4-Flash/Pro, V4.1-Flash) at the level where the model's own structure is
    what passes reason about.

    Design rules:
    * **A model is a `dsf.model` symbol table** holding `dsf.weight`
      declarations (named exactly as the released checkpoint names them) and
      `func.func` entry points. Ops refer to weights by symbol; the verifier of
      the model checks every use against the declared shape.
    * **Layers stay visible.** Every decoder block is one `dsf.layer` region,
      isolated from above, carrying its index, attention kind, compression ratio,
      CSA2 mode and (V4.1) its encoder/decoder stage.
    * **Sharing is dataflow.** A CSA2 Full layer *produces* SSA values of the
      layer-shared types `!dsf.cache` (compressed KV, index keys), `!dsf.topk`
      (its selection) and `!dsf.pool` (the candidate pool); Reindex and Reuse
      layers *consume* them through their operands. The model verifier checks
      that every consumer reads a producer of its own ratio, that a Reuse layer
      reads the nearest preceding index source, and so on.
    * **Formats live in types.** `#dsf.quant` describes a storage format
      (elements, scale format, block); cache and window types carry it, so byte
      reports are walks over types and a quantization pass changes them by
      changing types.
    * Activations are f32 tensors whose leading dimension is the token axis and
      is dynamic: the same IR serves a prefill of N tokens and a decode step.
  }];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let dependentDialects = ["::mlir::func::FuncDialect"];
  let extraClassDeclaration = [{
    void registerAttributes();
    void registerTypes();
  }];
}

class Dsf_Op<string mnemonic, list<Trait> traits = []>
    : Op<Dsf_Dialect, mnemonic, traits>;

#endif // DSF_DIALECT_TD
