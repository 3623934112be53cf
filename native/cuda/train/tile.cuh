// The small-GEMM building block shared by the fp32 training kernels:
//   C[m][n] += sum_r L[r][m] * R[r][n]     for a 32 x 32 tile of C,
// with both operands staged in shared memory one chunk of r at a time.
//
// The backward GEMMs of training are "transposed": dW = A^T dZ reduces over the
// batch (r = batch row), so the operand that is row-major in memory is indexed
// [r][m]. Writing the tile as a sum of outer products over r makes that the
// natural layout, and the forward X @ W1 is the same sum with r = k.
//
// 256 threads = 4 groups of 64. Group g takes r = g, g+4, ...; inside a group
// each thread owns a 4 x 4 micro-tile (rows 4*tm.., cols 4*tn..), reading four
// L values and four R values per r for 16 FMAs. At the end the 4 groups' partial
// tiles are added through shared memory (a split of the reduction dimension
// inside the block, so a tile with a short r range still keeps 8 warps busy).
#pragma once

#include "train.cuh"

namespace gemmpad::cuda::train {

inline constexpr int TILE = 32;
inline constexpr int TILE_THREADS = 256;

struct TileAcc {
    float v[4][4];
};

__device__ __forceinline__ void tile_zero(TileAcc& acc) {
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc.v[i][j] = 0.0f;
}

// One staged chunk: L[r][0..32) and R[r][0..32) for r < rc (row stride 32 floats, or LS for L:
// a multiple of 4, so the four values a thread needs are one aligned float4).
template <int LS = TILE>
__device__ __forceinline__ void tile_accumulate(const float* L, const float* R, int rc, TileAcc& acc) {
    const int g = threadIdx.x >> 6, lt = threadIdx.x & 63, tm = lt >> 3, tn = lt & 7;
#pragma unroll 4
    for (int r = g; r < rc; r += 4) {
        const float4 a = *reinterpret_cast<const float4*>(L + r * LS + tm * 4);
        const float4 b = *reinterpret_cast<const float4*>(R + r * TILE + tn * 4);
        const float av[4] = {a.x, a.y, a.z, a.w};
        const float bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < 4; ++j) acc.v[i][j] = fmaf(av[i], bv[j], acc.v[i][j]);
    }
}

// Adds the four groups' tiles; `red` is 4 * 32 * 32 floats of shared memory.
// Calls epi(m, n, value) for the 4 elements this thread finishes.
template <class Epi>
__device__ __forceinline__ void tile_reduce(const TileAcc& acc, float* red, Epi epi) {
    const int g = threadIdx.x >> 6, lt = threadIdx.x & 63, tm = lt >> 3, tn = lt & 7;
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) red[(g * TILE + tm * 4 + i) * TILE + tn * 4 + j] = acc.v[i][j];
    __syncthreads();
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        const int e = threadIdx.x + q * TILE_THREADS;
        const int m = e / TILE, n = e % TILE;
        // fixed order: the result does not depend on scheduling
        const float v = ((red[e] + red[TILE * TILE + e]) + red[2 * TILE * TILE + e]) + red[3 * TILE * TILE + e];
        epi(m, n, v);
    }
}

// SGD with momentum and weight decay, torch.optim.SGD semantics (dampening 0,
// no Nesterov): g += decay * p; v = mu * v + g; p -= lr * v.
__device__ __forceinline__ void sgd_step(float& p, float& v, float grad, const Hyper& h, float decay) {
    const float g = grad + decay * p;
    v = h.momentum * v + g;
    p = p - h.lr * v;
}

// The same on a parameter and its velocity in memory; returns the new parameter.
__device__ __forceinline__ float sgd_update(float* p, float* v, float grad, const Hyper& h, float decay) {
    float pv = *p, vv = *v;
    sgd_step(pv, vv, grad, h, decay);
    *v = vv;
    *p = pv;
    return pv;
}

}  // namespace gemmpad::cuda::train
