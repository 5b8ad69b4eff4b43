//===- DsfInterfaces.td - dsf op interfaces ----------------*- tablegen -*-===//
#ifndef DSF_INTERFACES_TD
#define DSF_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Dsf_WeightUserOpInterface : OpInterface<"WeightUserOpInterface"> {
  let cppNamespace = "::mlir::dsf";
  let description = [{
    An op that reads `dsf.weight` declarations by symbol. It lists each use with
    the shape it expects and the fraction of the weight one token touches (an
    embedding row, k of E experts); the model verifier checks the shapes
    against the declarations and the parameter report sums the fractions.
  }];
  let methods = [
    InterfaceMethod<"Appends the weights this op reads.", "void",
      "getWeightUses", (ins "::llvm::SmallVectorImpl<::mlir::dsf::WeightUse> &":$uses)>
  ];
}

#endif // DSF_INTERFACES_TD
