//===- state_codecs.cu - decoding restored state on the device -------------===//
//
// The runtime's own kernel (not the model's: those the compiler emits): a
// sequence restored from the host pool or the prefix store arrives as its
// tiers' bytes (FP8 windows, NVFP4 KV, MXFP4 index keys, f32 carries), which
// go to the device in one bulk copy; this kernel then decodes every tensor
// of the sequence in one launch, a segment (one tensor's rows from one
// record) per blockIdx.y. The values are bit-identical to the host's
// dequantizeRows (codecs.cpp): the host's own decode tables are uploaded,
// and each value is one fp32 product, as there. nvcc builds it (a fatbin:
// sm_90a code and compute_90 PTX) into the runtime; without nvcc the runtime
// decodes on the host.
//
//===----------------------------------------------------------------------===//

// Must match DecodeSegment in cuda_backend.h.
struct Segment {
  const unsigned char *codes, *scales;
  float *out;
  long long rows, cols;
  int format;   // 0 f32 bytes, 1 FP8 (E4M3 / UE8M0 per 32), 2 MXFP4 (E2M1 / UE8M0 per 32), 3 NVFP4 (E2M1 / E4M3 per 16)
  int unused;
};

// tables: E4M3 [0, 256), UE8M0 [256, 512), E2M1 [512, 528).
extern "C" __global__ void dsf_decode_state_rows(const Segment *segments, const float *tables) {
  const Segment s = segments[blockIdx.y];
  const long long n = s.rows * s.cols;
  const int block = s.format == 3 ? 16 : 32;
  const long long blocksPerRow = s.cols / block;
  const float *scaleTable = s.format == 3 ? tables : tables + 256;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    if (s.format == 0) {
      // Records are byte-packed: the f32 values need not be aligned.
      const unsigned char *b = s.codes + 4 * i;
      unsigned bits = unsigned(b[0]) | unsigned(b[1]) << 8 | unsigned(b[2]) << 16 | unsigned(b[3]) << 24;
      s.out[i] = __uint_as_float(bits);
      continue;
    }
    const long long r = i / s.cols, c = i - r * s.cols;
    const float scale = scaleTable[s.scales[r * blocksPerRow + c / block]];
    const float element = s.format == 1 ? tables[s.codes[i]]
                                        : tables[512 + ((s.codes[i / 2] >> (4 * (c & 1))) & 15)];
    s.out[i] = __fmul_rn(element, scale);
  }
}
