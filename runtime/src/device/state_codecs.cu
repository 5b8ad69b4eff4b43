//===- state_codecs.cu - the runtime's codec kernels on the device ----------===//
//
// The runtime's own kernels (not the model's: those the compiler emits).
// Decoding (dsf_decode_state_rows; also a batch's packed pages, with a row
// stride, when a sequence leaves it): a
// sequence restored from the host pool or the prefix store arrives as its
// tiers' bytes (FP8 windows, NVFP4 KV, MXFP4 index keys, f32 carries), which
// go to the device in one bulk copy; this kernel then decodes every tensor
// of the sequence in one launch, a segment (one tensor's rows from one
// record) per blockIdx.y. The values are bit-identical to the host's
// dequantizeRows (codecs.cpp): the host's own decode tables are uploaded,
// and each value is one fp32 product, as there. Packing (dsf_pack_state_rows,
// below). nvcc builds them (a fatbin: sm_90a code and compute_90 PTX) into
// the runtime; without nvcc the runtime decodes and packs on the host.
//
//===----------------------------------------------------------------------===//

// Must match DecodeSegment in cuda_backend.h.
struct Segment {
  const unsigned char *codes, *scales;
  float *out;
  long long rows, cols;
  int format;   // 0 f32 bytes, 1 FP8 (E4M3 / UE8M0 per 32), 2 MXFP4 (E2M1 / UE8M0 per 32), 3 NVFP4 (E2M1 / E4M3 per 16)
  int rowStride;   // 0: codes and scales each contiguous (a record's); else both rows' bytes apart (packed pages)
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
    const long long codeRow = s.rowStride ? s.rowStride : (s.format == 1 ? s.cols : s.cols / 2);
    const long long scaleRow = s.rowStride ? s.rowStride : blocksPerRow;
    const unsigned char *codes = s.codes + r * codeRow;
    const float scale = scaleTable[s.scales[r * scaleRow + c / block]];
    const float element = s.format == 1 ? tables[codes[c]] : tables[512 + ((codes[c / 2] >> (4 * (c & 1))) & 15)];
    s.out[i] = __fmul_rn(element, scale);
  }
}

// Packing a sequence's cache rows into a batch's packed pages (Batch::admit):
// the rows are a cache's decoded values, f32 on the device; each thread
// packs one block of one row as the host's quantizeRows does (codecs.cpp,
// the same fp32 operations), writes the codes and the scale byte into the
// row of `rowBytes` (codes, then scales), decodes them back with the host's
// tables and keeps the lowest segment (blockIdx.y) whose values do not come
// back bit for bit in *bad: its rows are not the format's, and the sequence
// is refused.
// Must match PackSegment in cuda_backend.h.
struct PackSegment {
  const float *in;
  unsigned char *out;
  long long rows, cols;
  int format;   // 1 FP8, 2 MXFP4, 3 NVFP4
  int rowBytes;
};

__device__ int e4m3Exponent(float a) {
  int e;
  frexpf(a, &e);
  return max(e - 1, -6);
}

__device__ float roundE4M3(float x) {
  const float a = fabsf(x);
  if (a == 0)
    return x;
  const float quantum = ldexpf(1.0f, e4m3Exponent(a) - 3);
  return copysignf(rintf(__fdiv_rn(a, quantum)) * quantum, x);
}

__device__ unsigned encodeE4M3(float value) {
  const float a = fabsf(value);
  const unsigned sign = signbit(value) ? 0x80 : 0;
  if (a == 0)
    return sign;
  int e = e4m3Exponent(a);
  int mant = int(rintf(__fdiv_rn(a, ldexpf(1.0f, e - 3))));
  if (mant == 16) {
    ++e;
    mant = 8;
  }
  const int field = mant >= 8 ? e + 7 : 0, bits = mant >= 8 ? mant - 8 : mant;
  return sign | unsigned(field << 3) | unsigned(bits);
}

__device__ unsigned ue8m0Scale(float amax, float maximum, float floor) {
  const float t = __fmul_rn(fmaxf(amax, floor), __fdiv_rn(1.0f, maximum));
  const unsigned b = __float_as_uint(t);
  const unsigned exponent = ((b >> 23) & 0xFF) + ((b & 0x7FFFFF) != 0);
  return min(exponent, 254u);
}

__device__ unsigned encodeE2M1(float x) {
  const float mid[7] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5};
  const float a = fminf(fabsf(x), 6.0f);
  int idx = 0;
  while (idx < 7 && mid[idx] < a)
    ++idx;
  if (idx < 7 && a == mid[idx] && (idx & 1))
    ++idx;
  return unsigned(idx) | (signbit(x) ? 8u : 0u);
}

extern "C" __global__ void dsf_pack_state_rows(const PackSegment *segments, const float *tables, int *bad) {
  const PackSegment s = segments[blockIdx.y];
  const int block = s.format == 3 ? 16 : 32;
  const long long blocksPerRow = s.cols / block, n = s.rows * blocksPerRow;
  const long long codeBytes = s.format == 1 ? s.cols : s.cols / 2;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const long long r = i / blocksPerRow, b = i - r * blocksPerRow;
    const float *v = s.in + r * s.cols + b * block;
    unsigned char *row = s.out + r * s.rowBytes;
    float amax = 0;
    for (int k = 0; k < block; ++k)
      amax = fmaxf(amax, fabsf(v[k]));
    unsigned scaleByte;
    float scale;
    if (s.format == 3) {
      scale = roundE4M3(fminf(__fdiv_rn(fmaxf(amax, 6.0f * ldexpf(1.0f, -9)), 6.0f), 448.0f));
      scaleByte = encodeE4M3(scale);
    } else {
      const bool fp8 = s.format == 1;
      scaleByte = ue8m0Scale(amax, fp8 ? 448.0f : 6.0f, fp8 ? 1e-4f : 6.0f * ldexpf(1.0f, -126));
      scale = tables[256 + scaleByte];
    }
    row[codeBytes + b] = (unsigned char)scaleByte;
    const float decodedScale = (s.format == 3 ? tables : tables + 256)[scaleByte];
    bool exact = true;
    for (int k = 0; k < block; k += (s.format == 1 ? 1 : 2)) {
      const long long c = b * block + k;
      if (s.format == 1) {
        const unsigned code = encodeE4M3(roundE4M3(fminf(fmaxf(__fdiv_rn(v[k], scale), -448.0f), 448.0f)));
        row[c] = (unsigned char)code;
        exact = exact && __float_as_uint(__fmul_rn(tables[code], decodedScale)) == __float_as_uint(v[k]);
      } else {
        const unsigned low = encodeE2M1(fminf(fmaxf(__fdiv_rn(v[k], scale), -6.0f), 6.0f));
        const unsigned high = encodeE2M1(fminf(fmaxf(__fdiv_rn(v[k + 1], scale), -6.0f), 6.0f));
        row[c / 2] = (unsigned char)(low | high << 4);
        exact = exact && __float_as_uint(__fmul_rn(tables[512 + low], decodedScale)) == __float_as_uint(v[k]) &&
                __float_as_uint(__fmul_rn(tables[512 + high], decodedScale)) == __float_as_uint(v[k + 1]);
      }
    }
    if (!exact)
      atomicMin(bad, int(blockIdx.y));
  }
}
