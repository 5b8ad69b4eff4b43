//===- incomplete_cuda.cpp - a libcuda.so.1 that lacks the driver's API ----===//
//
// A library named as the driver but holding only cuInit (an unrelated or a
// broken libcuda.so.1 first on the library path): the runtime must say which
// entry point it lacks, not crash (test/cuda/fake-driver.test).
//
//===----------------------------------------------------------------------===//
extern "C" __attribute__((visibility("default"))) int cuInit(unsigned) { return 0; }
