// Question: which warp-per-output GEMV reads bf16 weights at HBM speed?
//
// dsf's decode products run a warp per output (lowering/CUDA/TiledKernels.cpp,
// buildWarpGemv): lane l takes the depths l, l + 32, ... with `unroll` of them
// loaded together, then a shuffle sum. On f32 weights it reads 2.2-2.9 TB/s
// at V4.1's real sizes; on bf16 weights (half the bytes) it was slower in
// time, 0.7-0.8 TB/s (bench/results/gpu-weight-storage.md). This program
// times the same design and its variants on the decode products' shapes, to
// choose what the compiler should emit:
//   f32 / u4      the f32 kernel as dsf emits it (the anchor)
//   bf16 / u8     bf16 elements one a lane, 8 loads together, widened by
//                 cvt.f32.bf16 (dsf's first bf16 kernel) or by moving the bits
//   bf16x2 / uN   two adjacent bf16 a lane in one 32-bit load (and the two
//                 activations in one 64-bit load), N such loads together
//   bf16x8 / uN   eight adjacent bf16 a lane in one 128-bit load
// Built here with nvcc, run on the H200 (device tool):
//   nvcc -O3 -arch=sm_90a -o build/gemv-variants bench/gpu_gemv_variants.cu
//   build/gemv-variants                      # prints a markdown table
// Each kernel is timed with CUDA events over 20 launches after 3 warm-ups;
// its bytes are the weight's (the activation row is 20 KB at most and stays
// in L2). Every variant's result is checked against the f32 kernel's.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(x)                                                                                   \
  do {                                                                                             \
    cudaError_t e = (x);                                                                           \
    if (e != cudaSuccess) {                                                                        \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e));             \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

constexpr int kThreads = 256, kWarps = kThreads / 32;

__device__ float warpSum(float v) {
  for (int o = 16; o > 0; o /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// How a bf16 element becomes f32: cvt.f32.bf16 (what LLVM's NVPTX backend
// emits for fpext) or its bits moved to the high half (what cuda_bf16.h's
// __bfloat162float does); both exact.
__device__ float widen(float x) { return x; }
__device__ float widen(__nv_bfloat16 x) { return __bfloat162float(x); }
struct ByCvt {
  unsigned short bits;
};
__device__ float widen(ByCvt x) {
  float f;
  asm("cvt.f32.bf16 %0, %1;" : "=f"(f) : "h"(x.bits));
  return f;
}

// dsf's design: y[o] = sum_d a[d] w[o, d], a warp per output, `U` depths a lane
// loaded together (32 apart), the weight as stored (f32 or bf16).
template <typename W, int U>
__global__ void __launch_bounds__(kThreads) scalarGemv(const float *a, const W *w, float *y, int N, int K) {
  int o = blockIdx.x * kWarps + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (o >= N)
    return;
  const W *row = w + size_t(o) * K;
  float sum = 0;
  int d = lane;
  for (; d + 32 * (U - 1) < K; d += 32 * U) {
    float as[U];
    W ws[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      as[u] = a[d + 32 * u];
      ws[u] = row[d + 32 * u];
    }
#pragma unroll
    for (int u = 0; u < U; ++u)
      sum += as[u] * widen(ws[u]);
  }
  for (; d < K; d += 32)
    sum += a[d] * widen(row[d]);
  sum = warpSum(sum);
  if (lane == 0)
    y[o] = sum;
}

// Two adjacent bf16 a lane (one 32-bit load), the lanes 64 elements apart.
template <int U>
__global__ void __launch_bounds__(kThreads) pairGemv(const float *a, const __nv_bfloat16 *w, float *y, int N, int K) {
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

// Eight adjacent bf16 a lane (one 128-bit load), the lanes 256 elements apart.
template <int U>
__global__ void __launch_bounds__(kThreads) vec8Gemv(const float *a, const __nv_bfloat16 *w, float *y, int N, int K) {
  int o = blockIdx.x * kWarps + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (o >= N)
    return;
  const uint4 *row = reinterpret_cast<const uint4 *>(w + size_t(o) * K);
  const float4 *a4 = reinterpret_cast<const float4 *>(a);
  int vecs = K / 8;
  float sum = 0;
  int v = lane;
  auto madd = [&](uint4 q, float4 lo, float4 hi) {
    const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&q);
    float2 f0 = __bfloat1622float2(h[0]), f1 = __bfloat1622float2(h[1]), f2 = __bfloat1622float2(h[2]),
           f3 = __bfloat1622float2(h[3]);
    sum += lo.x * f0.x; sum += lo.y * f0.y; sum += lo.z * f1.x; sum += lo.w * f1.y;
    sum += hi.x * f2.x; sum += hi.y * f2.y; sum += hi.z * f3.x; sum += hi.w * f3.y;
  };
  for (; v + 32 * (U - 1) < vecs; v += 32 * U) {
    uint4 ws[U];
    float4 lo[U], hi[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      ws[u] = row[v + 32 * u];
      lo[u] = a4[2 * (v + 32 * u)];
      hi[u] = a4[2 * (v + 32 * u) + 1];
    }
#pragma unroll
    for (int u = 0; u < U; ++u)
      madd(ws[u], lo[u], hi[u]);
  }
  for (; v < vecs; v += 32)
    madd(row[v], a4[2 * v], a4[2 * v + 1]);
  sum = warpSum(sum);
  if (lane == 0)
    y[o] = sum;
}

struct Shape {
  const char *name;
  int N, K;
};

int main() {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("# Warp-per-output GEMV variants on %s\n\n", prop.name);
  std::printf("| product (N x K) | kernel | us | weight GB/s | x f32 kernel's time | max rel. diff |\n|---|---|---|---|---|---|\n");
  const Shape shapes[] = {{"wq_b", 32768, 1280}, {"wo_b", 5120, 8192}, {"expert w1 (one)", 2304, 5120},
                          {"head", 129280, 5120}};
  for (const Shape &s : shapes) {
    size_t n = size_t(s.N) * s.K;
    std::vector<float> hw(n), ha(s.K);
    unsigned seed = 12345;
    auto rnd = [&] {
      seed = seed * 1664525u + 1013904223u;
      return float(int(seed >> 9) - (1 << 22)) / float(1 << 22);
    };
    for (float &x : ha)
      x = rnd();
    std::vector<__nv_bfloat16> hb(n);
    for (size_t i = 0; i < n; ++i) {
      hb[i] = __float2bfloat16(rnd() * 0.05f);
      hw[i] = __bfloat162float(hb[i]);   // the same values in both
    }
    float *a, *wf, *y, *y0;
    __nv_bfloat16 *wb;
    CHECK(cudaMalloc(&a, s.K * 4));
    CHECK(cudaMalloc(&wf, n * 4));
    CHECK(cudaMalloc(&wb, n * 2));
    CHECK(cudaMalloc(&y, s.N * 4));
    CHECK(cudaMalloc(&y0, s.N * 4));
    CHECK(cudaMemcpy(a, ha.data(), s.K * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(wf, hw.data(), n * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(wb, hb.data(), n * 2, cudaMemcpyHostToDevice));
    int blocks = (s.N + kWarps - 1) / kWarps;
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    std::vector<float> ref(s.N), got(s.N);
    double anchorUs = 0;
    auto time = [&](const char *label, size_t bytes, auto launch, bool anchor) {
      for (int i = 0; i < 3; ++i)
        launch();
      CHECK(cudaEventRecord(e0));
      for (int i = 0; i < 20; ++i)
        launch();
      CHECK(cudaEventRecord(e1));
      CHECK(cudaEventSynchronize(e1));
      CHECK(cudaGetLastError());
      float ms = 0;
      CHECK(cudaEventElapsedTime(&ms, e0, e1));
      double us = 1000.0 * ms / 20;
      CHECK(cudaMemcpy(got.data(), y, s.N * 4, cudaMemcpyDeviceToHost));
      if (anchor) {
        ref = got;
        anchorUs = us;
      }
      double worst = 0, scale = 0;
      for (int i = 0; i < s.N; ++i)
        scale = std::fmax(scale, std::fabs(ref[i]));
      for (int i = 0; i < s.N; ++i)
        worst = std::fmax(worst, std::fabs(double(got[i]) - ref[i]) / (scale > 0 ? scale : 1));
      std::printf("| %s (%d x %d) | %s | %.1f | %.0f | x%.2f | %.1e |\n", s.name, s.N, s.K, label, us,
                  bytes / us / 1e3, anchorUs / us, worst);
    };
    time("f32 / u4 (dsf's f32)", n * 4, [&] { scalarGemv<float, 4><<<blocks, kThreads>>>(a, wf, y, s.N, s.K); }, true);
    time("bf16 / u4", n * 2, [&] { scalarGemv<__nv_bfloat16, 4><<<blocks, kThreads>>>(a, wb, y, s.N, s.K); }, false);
    time("bf16 / u8, high-half move", n * 2, [&] { scalarGemv<__nv_bfloat16, 8><<<blocks, kThreads>>>(a, wb, y, s.N, s.K); }, false);
    time("bf16 / u8, cvt.f32.bf16 (dsf's bf16)", n * 2, [&] {
      scalarGemv<ByCvt, 8><<<blocks, kThreads>>>(a, reinterpret_cast<const ByCvt *>(wb), y, s.N, s.K);
    }, false);
    time("bf16 / u16", n * 2, [&] { scalarGemv<__nv_bfloat16, 16><<<blocks, kThreads>>>(a, wb, y, s.N, s.K); }, false);
    time("bf16x2 / u4", n * 2, [&] { pairGemv<4><<<blocks, kThreads>>>(a, wb, y, s.N, s.K); }, false);
    time("bf16x2 / u8", n * 2, [&] { pairGemv<8><<<blocks, kThreads>>>(a, wb, y, s.N, s.K); }, false);
    time("bf16x8 / u1", n * 2, [&] { vec8Gemv<1><<<blocks, kThreads>>>(a, wb, y, s.N, s.K); }, false);
    time("bf16x8 / u2", n * 2, [&] { vec8Gemv<2><<<blocks, kThreads>>>(a, wb, y, s.N, s.K); }, false);
    time("f32 / u8", n * 4, [&] { scalarGemv<float, 8><<<blocks, kThreads>>>(a, wf, y, s.N, s.K); }, false);
    // As in a decode step: each launch reads another layer's copy of the
    // weight (40 copies, none in L2 or the TLBs from the launch before).
    {
      constexpr int kLayers = 40;
      std::vector<float *> fs(kLayers);
      std::vector<__nv_bfloat16 *> bs(kLayers);
      bool fit = true;
      for (int l = 0; l < kLayers && fit; ++l) {
        fit = cudaMalloc(&fs[l], n * 4) == cudaSuccess && cudaMalloc(&bs[l], n * 2) == cudaSuccess;
        if (fit) {
          CHECK(cudaMemcpy(fs[l], wf, n * 4, cudaMemcpyDeviceToDevice));
          CHECK(cudaMemcpy(bs[l], wb, n * 2, cudaMemcpyDeviceToDevice));
        }
      }
      cudaGetLastError();
      if (fit) {
        int layer = 0;
        time("f32 / u4, another layer's copy each launch", n * 4, [&] {
          scalarGemv<float, 4><<<blocks, kThreads>>>(a, fs[layer++ % kLayers], y, s.N, s.K);
        }, false);
        time("bf16 / u8, another layer's copy each launch", n * 2, [&] {
          scalarGemv<__nv_bfloat16, 8><<<blocks, kThreads>>>(a, bs[layer++ % kLayers], y, s.N, s.K);
        }, false);
        time("bf16x2 / u4, another layer's copy each launch", n * 2, [&] {
          pairGemv<4><<<blocks, kThreads>>>(a, bs[layer++ % kLayers], y, s.N, s.K);
        }, false);
      } else {
        std::printf("| %s | 40 copies do not fit | | | | |\n", s.name);
      }
      for (int l = 0; l < kLayers; ++l) {
        cudaFree(fs[l]);
        cudaFree(bs[l]);
      }
      cudaGetLastError();
    }
    CHECK(cudaFree(a));
    CHECK(cudaFree(wf));
    CHECK(cudaFree(wb));
    CHECK(cudaFree(y));
    CHECK(cudaFree(y0));
  }
  return 0;
}
