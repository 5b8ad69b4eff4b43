//===- DsfDialect.cpp - dsf dialect registration ---------------------------===//
#include "dialect/DsfDialect.h"

using namespace mlir;
using namespace mlir::dsf;

#include "dialect/DsfDialect.cpp.inc"
#include "dialect/DsfEnums.cpp.inc"
#include "dialect/DsfInterfaces.cpp.inc"

void DsfDialect::initialize() {
  registerAttributes();
  registerTypes();
  addOperations<
#define GET_OP_LIST
#include "dialect/DsfOps.cpp.inc"
      >();
}
