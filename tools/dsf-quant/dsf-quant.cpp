//===- dsf-quant.cpp - quantize safetensors files in dsf's formats ---------===//
//
//   dsf-quant IN.safetensors -o OUT.safetensors --format=fp8|mxfp4|nvfp4
//             [--weight-blocks=RxC] [--only=GLOB]
//   dsf-quant IN.safetensors -o OUT.safetensors --dequantize
//
// Every floating-point tensor NAME is quantized along its last dimension in
// blocks (fp8 and mxfp4: 32, nvfp4: 16) into NAME (the codes: F8_E4M3, or U8
// with two E2M1 a byte, even column in the low nibble) and NAME.scale (one
// byte a block: F8_E8M0 for UE8M0 scales, F8_E4M3 for NVFP4's), the released
// checkpoints' convention. --weight-blocks gives FP8 with one UE8M0 scale per
// RxC block of the last two dimensions, as checkpoints store weights. Other
// tensors are copied; so are those whose name GLOB (fnmatch) does not match,
// which makes checkpoints as they are released: matrices FP8 in 128x128
// blocks, routed experts FP4, norms and biases plain. --dequantize turns
// such a file back into f32.
// A runtime tool: it links the runtime only, no MLIR or LLVM.
//
//===----------------------------------------------------------------------===//
#include "dsf/codecs.h"
#include "dsf/safetensors.h"

#include <cmath>
#include <fnmatch.h>
#include <cstdio>
#include <cstring>
#include <string>

using namespace dsf::rt;

namespace {
int fail(const std::string &msg) {
  std::fprintf(stderr, "dsf-quant: error: %s\n", msg.c_str());
  return 1;
}

void usage() {
  std::fprintf(stderr,
               "usage: dsf-quant IN.safetensors -o OUT.safetensors --format=fp8|mxfp4|nvfp4 "
               "[--weight-blocks=RxC] [--only=GLOB]\n"
               "       dsf-quant IN.safetensors -o OUT.safetensors --dequantize\n");
}

bool isFloating(DType d) {
  return d == DType::F32 || d == DType::F64 || d == DType::F16 || d == DType::BF16;
}

OwnedTensor copyOf(const TensorView &t) {
  return {t.name, t.dtype, t.shape, std::vector<uint8_t>(t.data, t.data + t.bytes)};
}

std::vector<uint8_t> floatBytes(const std::vector<float> &v) {
  std::vector<uint8_t> out(v.size() * 4);
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}
} // namespace

int main(int argc, char **argv) {
  std::string input, output, format, blocks, only;
  bool dequantize = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-o" && i + 1 < argc)
      output = argv[++i];
    else if (a.rfind("--format=", 0) == 0)
      format = a.substr(9);
    else if (a.rfind("--weight-blocks=", 0) == 0)
      blocks = a.substr(16);
    else if (a.rfind("--only=", 0) == 0)
      only = a.substr(7);
    else if (a == "--dequantize")
      dequantize = true;
    else if (a == "-h" || a == "--help") {
      usage();
      return 0;
    } else if (!a.empty() && a[0] != '-' && input.empty())
      input = a;
    else {
      usage();
      return fail("unknown argument '" + a + "'");
    }
  }
  if (input.empty() || output.empty()) {
    usage();
    return fail("needs an input file and -o OUTPUT");
  }
  if (dequantize && !only.empty())
    return fail("--only applies to quantizing");
  if (dequantize == !format.empty())
    return fail("give exactly one of --format=... and --dequantize");
  RowFormat rowFormat = RowFormat::FP8;
  if (!dequantize && !parseRowFormat(format, rowFormat))
    return fail("--format: unknown format '" + format + "' (expected fp8, mxfp4 or nvfp4)");
  int64_t br = 0, bc = 0;
  if (!blocks.empty()) {
    if (rowFormat != RowFormat::FP8 || dequantize)
      return fail("--weight-blocks applies to --format=fp8 only");
    if (std::sscanf(blocks.c_str(), "%ldx%ld", &br, &bc) != 2 || br < 1 || bc < 1)
      return fail("--weight-blocks: expected RxC with positive sizes (32x32, 128x128), got '" +
                  blocks + "'");
  }

  std::string error;
  auto file = SafetensorsFile::open(input, error);
  if (!file)
    return fail(error);
  std::vector<OwnedTensor> out;
  std::map<std::string, std::string> metadata = file->metadata();

  if (!dequantize) {
    auto matches = [&](const TensorView &t) { return only.empty() || fnmatch(only.c_str(), t.name.c_str(), 0) == 0; };
    auto selected = [&](const TensorView &t) { return isFloating(t.dtype) && matches(t); };
    for (const TensorView &t : file->tensors())
      if (matches(t) && file->find(t.name + ".scale"))
        return fail(input + ": tensor '" + t.name + "' already has a '" + t.name +
                    ".scale' (a quantized file?)");
    size_t quantized = 0;
    for (const TensorView &t : file->tensors()) {
      if (!selected(t)) {
        out.push_back(copyOf(t));
        continue;
      }
      std::vector<float> values;
      if (!readAsFloat(t, values, error))
        return fail(input + ": " + error);
      for (size_t i = 0; i < values.size(); ++i)
        if (!std::isfinite(values[i]))
          return fail(input + ": tensor '" + t.name + "' holds a non-finite value at element " +
                      std::to_string(i));
      if (t.shape.empty())
        return fail(input + ": tensor '" + t.name + "' is a scalar; blocks run along a last dimension");
      int64_t cols = t.shape.back(), rows = cols ? t.elements() / cols : 0;
      OwnedTensor codes{t.name, DType::F8_E4M3, t.shape, {}};
      OwnedTensor scales{t.name + ".scale", DType::F8_E8M0, t.shape, {}};
      if (br) {
        if (t.shape.size() < 2)
          return fail(input + ": tensor '" + t.name + "' has rank 1; --weight-blocks needs a matrix");
        int64_t r = t.shape[t.shape.size() - 2], outer = t.elements() / (r * cols);
        int64_t nbr = (r + br - 1) / br, nbc = (cols + bc - 1) / bc;
        codes.data.resize(t.elements());
        scales.data.resize(outer * nbr * nbc);
        for (int64_t o = 0; o < outer; ++o)
          quantizeFp8Blocks(values.data() + o * r * cols, r, cols, br, bc,
                            codes.data.data() + o * r * cols, scales.data.data() + o * nbr * nbc);
        scales.shape[scales.shape.size() - 2] = nbr;
        scales.shape.back() = nbc;
      } else {
        int64_t block = blockOf(rowFormat);
        if (cols % block)
          return fail(input + ": tensor '" + t.name + "': last dimension " + std::to_string(cols) +
                      " is not divisible by the " + std::to_string(block) + "-element " +
                      rowFormatName(rowFormat) + " block");
        codes.data.resize(rows * codeBytes(rowFormat, cols));
        scales.data.resize(rows * (cols / block));
        quantizeRows(values.data(), rows, cols, rowFormat, codes.data.data(), scales.data.data());
        if (rowFormat != RowFormat::FP8) {
          codes.dtype = DType::U8;
          codes.shape.back() = cols / 2;
        }
        if (rowFormat == RowFormat::NVFP4)
          scales.dtype = DType::F8_E4M3;
        scales.shape.back() = cols / block;
      }
      out.push_back(std::move(codes));
      out.push_back(std::move(scales));
      ++quantized;
    }
    if (!only.empty() && quantized == 0)
      return fail("--only: no floating-point tensor of " + input + " matches '" + only + "'");
    metadata["dsf.format"] = rowFormatName(rowFormat);
    if (br)
      metadata["dsf.weight_blocks"] = blocks;
  } else {
    auto it = metadata.find("dsf.format");
    if (it == metadata.end() || !parseRowFormat(it->second, rowFormat))
      return fail(input + ": not written by dsf-quant (no dsf.format in __metadata__)");
    auto wb = metadata.find("dsf.weight_blocks");
    if (wb != metadata.end() && std::sscanf(wb->second.c_str(), "%ldx%ld", &br, &bc) != 2)
      return fail(input + ": bad dsf.weight_blocks '" + wb->second + "'");
    for (const TensorView &t : file->tensors()) {
      if (t.name.size() > 6 && t.name.compare(t.name.size() - 6, 6, ".scale") == 0 &&
          file->find(t.name.substr(0, t.name.size() - 6)))
        continue;
      const TensorView *s = file->find(t.name + ".scale");
      if (!s) {
        out.push_back(copyOf(t));
        continue;
      }
      std::vector<int64_t> shape = t.shape;
      if (shape.empty())
        return fail(input + ": tensor '" + t.name + "' is a scalar");
      if (rowFormat != RowFormat::FP8)
        shape.back() *= 2;
      int64_t cols = shape.back(), elements = 1;
      for (int64_t d : shape)
        elements *= d;
      int64_t rows = cols ? elements / cols : 0;
      std::vector<float> values(elements);
      if (br) {
        int64_t r = shape.size() >= 2 ? shape[shape.size() - 2] : 1, outer = elements / (r * cols);
        int64_t nbr = (r + br - 1) / br, nbc = (cols + bc - 1) / bc;
        if (int64_t(s->bytes) != outer * nbr * nbc || int64_t(t.bytes) != elements)
          return fail(input + ": tensor '" + t.name + "' and its scales disagree with " + blocks +
                      " blocks");
        for (int64_t o = 0; o < outer; ++o)
          dequantizeFp8Blocks(t.data + o * r * cols, s->data + o * nbr * nbc, r, cols, br, bc,
                              values.data() + o * r * cols);
      } else {
        int64_t block = blockOf(rowFormat);
        if (cols % block || int64_t(s->bytes) != rows * (cols / block) ||
            int64_t(t.bytes) != rows * codeBytes(rowFormat, cols))
          return fail(input + ": tensor '" + t.name + "' and its scales disagree with " +
                      rowFormatName(rowFormat) + " blocks");
        dequantizeRows(t.data, s->data, rows, cols, rowFormat, values.data());
      }
      out.push_back({t.name, DType::F32, shape, floatBytes(values)});
    }
    metadata.erase("dsf.format");
    metadata.erase("dsf.weight_blocks");
  }
  if (!writeSafetensors(output, out, metadata, error))
    return fail(error);
  return 0;
}
