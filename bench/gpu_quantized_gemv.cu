// Question: what would a decode token's products gain if dsf kept the
// weights in the released formats and decoded them in the kernel, rather
// than binding them as bf16 (issue 5: "weights kept in FP8 / FP4 and
// decoded in the kernels", the largest lever at one sequence a step)?
//
// V4.1-Flash ships its dense products in FP8 E4M3 with one UE8M0 scale per
// 32 x 32 block and its routed experts in MXFP4 (E2M1 pairs a byte, one
// UE8M0 scale per 32 along the depth) (../shared/design/MODEL.md). dsf's
// runtime decodes both to bf16 at load, and its decode products run a warp
// per output over bf16 pairs (lowering/CUDA/TiledKernels.cpp, buildWarpGemv:
// the "bf16x2 / u4" design bench/gpu_gemv_variants.cu chose). This program
// times that kernel against warp-per-output kernels of the same design that
// read the released bytes and decode them in registers:
//   bf16x2 / u4          dsf's kernel on the bf16 weight (the anchor)
//   fp8 xV / uU          V E4M3 a lane in one load (4: 32 bits, 8: 64,
//                        16: 128), U loads together; cvt.rn.f16x2.e4m3x2
//                        (sm_89+) then f16 -> f32; a load's V depths lie in
//                        one 32-block, so its partial sum takes the block's
//                        scale once (an f32 table the runtime would make at
//                        load: 4 bytes a 1,024 weights)
//   mxfp4 xV / uU        V E2M1 a lane (8: 32 bits, 16: 64, 32: 128), the
//                        checkpoint's order (low nibble first); each code
//                        becomes an f16 by moving its bits (magnitude to
//                        bits 9-11, sign to 15: the value / 2^14, exact, the
//                        2^14 folded into the block's scale), the scale's
//                        UE8M0 byte read as the f32 2^(s-127)
// Every kernel reads another layer's copy of its weight each launch (40
// copies, none left in L2 by the launch before: a decode step's reality;
// an expert's MXFP4 matrix alone is 6 MB and would stay in the H100's 50 MB).
// Its result is checked against a double-precision product of the decoded
// values on the host (the same values the bf16 copy holds: every E4M3 and
// E2M1 value times a power of two is exact in bf16 where the scale keeps it
// in bf16's range, as it does here).
//   nvcc -O3 -arch=sm_90a -o build/quantized-gemv bench/gpu_quantized_gemv.cu
//   build/quantized-gemv                     # prints a markdown table
// Timing: CUDA events over 40 launches after 3 warm-ups.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(x)                                                                                   \
  do {                                                                                             \
    cudaError_t e = (x);                                                                           \
    if (e != cudaSuccess) {                                                                        \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e));             \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

constexpr int kThreads = 256, kWarps = kThreads / 32, kLayers = 40, kBlock = 32;

__device__ float warpSum(float v) {
  for (int o = 16; o > 0; o /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// dsf's bf16 kernel: two adjacent bf16 a lane, the lanes 64 elements apart.
template <int U>
__global__ void __launch_bounds__(kThreads) bf16PairGemv(const float *a, const __nv_bfloat16 *w, float *y, int N,
                                                         int K) {
  int o = blockIdx.x * kWarps + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (o >= N)
    return;
  const __nv_bfloat162 *row = reinterpret_cast<const __nv_bfloat162 *>(w + size_t(o) * K);
  const float2 *a2 = reinterpret_cast<const float2 *>(a);
  int pairs = K / 2;
  float sum = 0;
  int p = lane;
  for (; p + 32 * (U - 1) < pairs; p += 32 * U) {
    float2 as[U];
    __nv_bfloat162 ws[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      as[u] = a2[p + 32 * u];
      ws[u] = row[p + 32 * u];
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      float2 wf = __bfloat1622float2(ws[u]);
      sum += as[u].x * wf.x;
      sum += as[u].y * wf.y;
    }
  }
  for (; p < pairs; p += 32) {
    float2 wf = __bfloat1622float2(row[p]);
    sum += a2[p].x * wf.x;
    sum += a2[p].y * wf.y;
  }
  sum = warpSum(sum);
  if (lane == 0)
    y[o] = sum;
}

// V bytes a lane in one load.
template <int V> struct Bytes;
template <> struct Bytes<4> { using T = uint32_t; };
template <> struct Bytes<8> { using T = uint2; };
template <> struct Bytes<16> { using T = uint4; };
template <int V> __device__ uint32_t word(const typename Bytes<V>::T &q, int i) {
  return reinterpret_cast<const uint32_t *>(&q)[i];
}

// Four E4M3 of a word times four activations: two cvt.rn.f16x2.e4m3x2.
__device__ float fp8Dot4(uint32_t w, const float *act) {
  __half2_raw lo = __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t(w & 0xffffu), __NV_E4M3);
  __half2_raw hi = __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t(w >> 16), __NV_E4M3);
  float2 l = __half22float2(*reinterpret_cast<__half2 *>(&lo)), h = __half22float2(*reinterpret_cast<__half2 *>(&hi));
  float4 x = *reinterpret_cast<const float4 *>(act);   // 16-byte aligned: 4 | the depth
  float s = x.x * l.x;
  s += x.y * l.y;
  s += x.z * h.x;
  s += x.w * h.y;
  return s;
}

// FP8 E4M3 weights [N, K], scales [N / 32, K / 32] as f32.
template <int V, int U>
__global__ void __launch_bounds__(kThreads) fp8Gemv(const float *a, const uint8_t *w, const float *scales, float *y,
                                                    int N, int K) {
  int o = blockIdx.x * kWarps + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (o >= N)
    return;
  using T = typename Bytes<V>::T;
  const T *row = reinterpret_cast<const T *>(w + size_t(o) * K);
  const float *scaleRow = scales + size_t(o / kBlock) * (K / kBlock);
  int loads = K / V;
  float sum = 0;
  int p = lane;
  auto part = [&](const T &q, int at) {
    const float *act = a + size_t(at) * V;
    float s = 0;
#pragma unroll
    for (int i = 0; i < V / 4; ++i)
      s += fp8Dot4(word<V>(q, i), act + 4 * i);
    return s * scaleRow[at * V / kBlock];
  };
  for (; p + 32 * (U - 1) < loads; p += 32 * U) {
    T ws[U];
#pragma unroll
    for (int u = 0; u < U; ++u)
      ws[u] = row[p + 32 * u];
#pragma unroll
    for (int u = 0; u < U; ++u)
      sum += part(ws[u], p + 32 * u);
  }
  for (; p < loads; p += 32)
    sum += part(row[p], p);
  sum = warpSum(sum);
  if (lane == 0)
    y[o] = sum;
}

// Eight E2M1 of a word (low nibble first) times eight activations, each
// code made an f16 of 2^-14 its value: magnitude bits (e1 e0 m) to 9-11,
// sign to 15, two codes a half2.
__device__ float fp4Dot8(uint32_t w, const float *act) {
  float4 lo = reinterpret_cast<const float4 *>(act)[0], hi = reinterpret_cast<const float4 *>(act)[1];
  const float x[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
  float s = 0;
#pragma unroll
  for (int b = 0; b < 4; ++b) {
    uint32_t byte = w >> (8 * b);
    uint32_t bits = ((byte & 0x7u) << 9) | ((byte & 0x8u) << 12) | ((byte & 0x70u) << 21) | ((byte & 0x80u) << 24);
    float2 f = __half22float2(*reinterpret_cast<__half2 *>(&bits));
    s += x[2 * b] * f.x;
    s += x[2 * b + 1] * f.y;
  }
  return s;
}

// MXFP4 weights [N, K / 2] bytes, scales [N, K / 32] as UE8M0 bytes.
template <int V, int U>
__global__ void __launch_bounds__(kThreads) mxfp4Gemv(const float *a, const uint8_t *w, const uint8_t *scales,
                                                      float *y, int N, int K) {
  int o = blockIdx.x * kWarps + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (o >= N)
    return;
  using T = typename Bytes<V / 2>::T;
  const T *row = reinterpret_cast<const T *>(w + size_t(o) * (K / 2));
  const uint8_t *scaleRow = scales + size_t(o) * (K / kBlock);
  int loads = K / V;
  float sum = 0;
  int p = lane;
  auto part = [&](const T &q, int at) {
    const float *act = a + size_t(at) * V;
    float s = 0;
#pragma unroll
    for (int i = 0; i < V / 8; ++i)
      s += fp4Dot8(word<V / 2>(q, i), act + 8 * i);
    uint32_t e = scaleRow[at * V / kBlock];
    // 2^(e-127) * 2^14 (the codes' f16 bias); e = 0 would be f32's 2^-127,
    // a subnormal: 2^-113 times 2^-127 is exact as two multiplies.
    float scale = e ? __uint_as_float(e << 23) : __uint_as_float(0x00400000u);
    return s * scale * 16384.0f;
  };
  for (; p + 32 * (U - 1) < loads; p += 32 * U) {
    T ws[U];
#pragma unroll
    for (int u = 0; u < U; ++u)
      ws[u] = row[p + 32 * u];
#pragma unroll
    for (int u = 0; u < U; ++u)
      sum += part(ws[u], p + 32 * u);
  }
  for (; p < loads; p += 32)
    sum += part(row[p], p);
  sum = warpSum(sum);
  if (lane == 0)
    y[o] = sum;
}

// Host decoding (the reference).
float e4m3(uint8_t c) {
  int s = c >> 7, e = (c >> 3) & 15, m = c & 7;
  float v = e ? std::ldexp(1.0f + m / 8.0f, e - 7) : std::ldexp(m / 8.0f, -6);
  return s ? -v : v;
}
float e2m1(uint8_t c) {
  static const float mag[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  return (c & 8) ? -mag[c & 7] : mag[c & 7];
}

struct Shape {
  const char *name;
  int N, K;
  bool expert;   // MXFP4 (a routed expert) or FP8 (a dense product)
};

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("# Decode products on the released weight formats, decoded in the kernel, on %s\n\n", prop.name);
  std::printf("Each launch reads another of %d copies of the weight.\n\n", kLayers);
  std::printf("| product (N x K) | kernel | bytes read | us | GB/s | time / anchor's | max rel. diff |\n"
              "|---|---|---|---|---|---|---|\n");
  const Shape shapes[] = {{"wq_b", 32768, 1280, false},       {"wo_b", 5120, 8192, false},
                          {"wq_a", 1280, 5120, false},        {"expert w1 (one)", 2304, 5120, true},
                          {"expert w2 (one)", 5120, 2304, true}};
  int failures = 0;
  unsigned seed = 12345;
  auto rnd = [&] {
    seed = seed * 1664525u + 1013904223u;
    return seed >> 8;
  };
  for (const Shape &s : shapes) {
    size_t n = size_t(s.N) * s.K;
    std::vector<float> act(s.K), value(n);
    for (float &x : act)
      x = float(int(rnd() % 2001) - 1000) / 1000.0f;
    // The released bytes and the values they decode to.
    std::vector<uint8_t> codes, scaleBytes;
    std::vector<float> scaleF32;
    if (!s.expert) {
      codes.resize(n);
      scaleF32.resize(size_t(s.N / kBlock) * (s.K / kBlock));
      for (float &x : scaleF32)
        x = std::ldexp(1.0f, int(rnd() % 7) - 12);   // 2^-12 .. 2^-6
      for (size_t i = 0; i < n; ++i) {
        uint8_t c;
        do
          c = uint8_t(rnd());
        while ((c & 0x7f) == 0x7f);   // NaN
        codes[i] = c;
        size_t r = i / s.K, d = i % s.K;
        value[i] = e4m3(c) * scaleF32[(r / kBlock) * (s.K / kBlock) + d / kBlock];
      }
    } else {
      codes.resize(n / 2);
      scaleBytes.resize(n / kBlock);
      for (uint8_t &e : scaleBytes)
        e = uint8_t(127 - 10 + rnd() % 6);   // 2^-10 .. 2^-5
      for (size_t i = 0; i < n / 2; ++i)
        codes[i] = uint8_t(rnd());
      for (size_t i = 0; i < n; ++i) {
        uint8_t c = (codes[i / 2] >> (4 * (i % 2))) & 15;
        value[i] = e2m1(c) * std::ldexp(1.0f, int(scaleBytes[i / kBlock]) - 127);
      }
    }
    std::vector<__nv_bfloat16> bf(n);
    for (size_t i = 0; i < n; ++i)
      bf[i] = __float2bfloat16(value[i]);   // exact: see the header
    std::vector<double> ref(s.N, 0.0);
    double refScale = 0;
    for (int r = 0; r < s.N; ++r) {
      for (int d = 0; d < s.K; ++d)
        ref[r] += double(act[d]) * value[size_t(r) * s.K + d];
      refScale = std::fmax(refScale, std::fabs(ref[r]));
    }

    float *a, *y;
    CHECK(cudaMalloc(&a, s.K * 4));
    CHECK(cudaMalloc(&y, s.N * 4));
    CHECK(cudaMemcpy(a, act.data(), s.K * 4, cudaMemcpyHostToDevice));
    std::vector<__nv_bfloat16 *> bfCopies(kLayers);
    std::vector<uint8_t *> codeCopies(kLayers), scaleCopies(kLayers);
    size_t scaleSize = s.expert ? scaleBytes.size() : scaleF32.size() * 4;
    const void *scaleHost = s.expert ? static_cast<const void *>(scaleBytes.data()) : scaleF32.data();
    for (int l = 0; l < kLayers; ++l) {
      CHECK(cudaMalloc(&bfCopies[l], n * 2));
      CHECK(cudaMalloc(&codeCopies[l], codes.size()));
      CHECK(cudaMalloc(&scaleCopies[l], scaleSize));
      CHECK(cudaMemcpy(bfCopies[l], bf.data(), n * 2, cudaMemcpyHostToDevice));
      CHECK(cudaMemcpy(codeCopies[l], codes.data(), codes.size(), cudaMemcpyHostToDevice));
      CHECK(cudaMemcpy(scaleCopies[l], scaleHost, scaleSize, cudaMemcpyHostToDevice));
    }
    int blocks = (s.N + kWarps - 1) / kWarps;
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    std::vector<float> got(s.N);
    double anchorUs = 0;
    auto time = [&](const char *label, size_t bytes, auto launch) {
      int layer = 0;
      for (int i = 0; i < 3; ++i)
        launch(layer++ % kLayers);
      CHECK(cudaEventRecord(e0));
      for (int i = 0; i < kLayers; ++i)
        launch(layer++ % kLayers);
      CHECK(cudaEventRecord(e1));
      CHECK(cudaEventSynchronize(e1));
      CHECK(cudaGetLastError());
      float ms = 0;
      CHECK(cudaEventElapsedTime(&ms, e0, e1));
      double us = 1000.0 * ms / kLayers;
      if (anchorUs == 0)
        anchorUs = us;
      CHECK(cudaMemcpy(got.data(), y, s.N * 4, cudaMemcpyDeviceToHost));
      // Relative to the largest output; NaN never passes.
      double worst = 0;
      bool finite = true;
      for (int i = 0; i < s.N; ++i) {
        finite = finite && std::isfinite(got[i]);
        worst = std::fmax(worst, std::fabs(double(got[i]) - ref[i]) / (refScale > 0 ? refScale : 1));
      }
      char error[32];
      std::snprintf(error, sizeof error, finite ? "%.1e" : "NaN", worst);
      std::printf("| %s (%d x %d) | %s | %.1f MB | %.1f | %.0f | x%.2f | %s |\n", s.name, s.N, s.K, label,
                  bytes / 1e6, us, bytes / us / 1e3, us / anchorUs, error);
      std::fflush(stdout);
      if (!finite || worst > 1e-4)
        ++failures;
    };
    float *x = a, *out = y;
    int N = s.N, K = s.K;
    time("bf16x2 / u4 (dsf's, on bf16)", n * 2, [&](int l) {
      bf16PairGemv<4><<<blocks, kThreads>>>(x, bfCopies[l], out, N, K);
    });
    size_t quantBytes = codes.size() + (s.expert ? scaleBytes.size() : scaleF32.size() * 4);
    if (!s.expert) {
      time("fp8 x4 / u4", quantBytes, [&](int l) {
        fp8Gemv<4, 4><<<blocks, kThreads>>>(x, codeCopies[l], reinterpret_cast<const float *>(scaleCopies[l]), out, N, K);
      });
      time("fp8 x8 / u2", quantBytes, [&](int l) {
        fp8Gemv<8, 2><<<blocks, kThreads>>>(x, codeCopies[l], reinterpret_cast<const float *>(scaleCopies[l]), out, N, K);
      });
      time("fp8 x8 / u4", quantBytes, [&](int l) {
        fp8Gemv<8, 4><<<blocks, kThreads>>>(x, codeCopies[l], reinterpret_cast<const float *>(scaleCopies[l]), out, N, K);
      });
      time("fp8 x16 / u1", quantBytes, [&](int l) {
        fp8Gemv<16, 1><<<blocks, kThreads>>>(x, codeCopies[l], reinterpret_cast<const float *>(scaleCopies[l]), out, N, K);
      });
      time("fp8 x16 / u2", quantBytes, [&](int l) {
        fp8Gemv<16, 2><<<blocks, kThreads>>>(x, codeCopies[l], reinterpret_cast<const float *>(scaleCopies[l]), out, N, K);
      });
    } else {
      time("mxfp4 x8 / u4", quantBytes, [&](int l) {
        mxfp4Gemv<8, 4><<<blocks, kThreads>>>(x, codeCopies[l], scaleCopies[l], out, N, K);
      });
      time("mxfp4 x16 / u2", quantBytes, [&](int l) {
        mxfp4Gemv<16, 2><<<blocks, kThreads>>>(x, codeCopies[l], scaleCopies[l], out, N, K);
      });
      time("mxfp4 x16 / u4", quantBytes, [&](int l) {
        mxfp4Gemv<16, 4><<<blocks, kThreads>>>(x, codeCopies[l], scaleCopies[l], out, N, K);
      });
      time("mxfp4 x32 / u1", quantBytes, [&](int l) {
        mxfp4Gemv<32, 1><<<blocks, kThreads>>>(x, codeCopies[l], scaleCopies[l], out, N, K);
      });
      time("mxfp4 x32 / u2", quantBytes, [&](int l) {
        mxfp4Gemv<32, 2><<<blocks, kThreads>>>(x, codeCopies[l], scaleCopies[l], out, N, K);
      });
    }
    for (int l = 0; l < kLayers; ++l) {
      CHECK(cudaFree(bfCopies[l]));
      CHECK(cudaFree(codeCopies[l]));
      CHECK(cudaFree(scaleCopies[l]));
    }
    CHECK(cudaFree(a));
    CHECK(cudaFree(y));
  }
  std::printf("\n%d kernels off the reference by more than 1e-4 of the largest output (or NaN)\n", failures);
  return failures ? 1 : 0;
}
