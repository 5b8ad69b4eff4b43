//===- dsf-opt.cpp - mlir-opt for the dsf dialect and passes ---------------===//
#include "tools/RegisterAll.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  dsf::registerAllDialects(registry);
  dsf::registerAllPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "dsf optimizer driver\n", registry));
}
