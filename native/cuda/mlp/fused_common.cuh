// Device helpers shared by the whole-network kernels (fused_mlp.cu, fused_mlp_ksplit.cu,
// fused_mlp_tc.cu): tensor-core fragments in the weights' upload order, the
// tf32 split, cluster barriers and the st.async hand-off. Only .cu files
// include this (mlp.cuh stays host-compilable for bind_mlp.cpp).
//
// Fragment order (weights.cu writes it at upload, see fragment_order there): a
// padded weight matrix M [K][N] is stored as [N/16 column pairs p][K/8 k-steps
// j][32 lanes][4 floats], lane = 4 * g + t holding
//     { M[8j+t][16p+g], M[8j+t+4][16p+g], M[8j+t][16p+8+g], M[8j+t+4][16p+8+g] }
// = the B fragments of mma.m16n8k8 (b0, b1) for the two n-tiles of pair p. One
// coalesced 16-byte load per lane per k-step feeds two tensor-core products,
// or, read as plain floats, four FMA weights.
#pragma once

#include <cstdint>

#include "mlp.cuh"

namespace gemmpad::cuda {

inline constexpr int kKSteps1 = kIn / 8;         // 98 k-steps of layer 1
inline constexpr int kKSteps2 = kHiddenPad / 8;  // 14 k-steps of layers 2 and 3
inline constexpr int kPairs = kHiddenPad / 16;   // 7 column pairs (16 hidden units each)

// Four 8-bit pixels (one 32-bit word, first pixel lowest) as floats x * float32(1/255), a rounded
// multiply (never contracted): the very floats gemmpad.inputs.preprocess makes of uint8 pixels.
// The conversion kernel (mlp.cu) and the split kernel's 8-bit x slices (fused_mlp.cu) both use it.
inline constexpr float kPixelScale = (float)(1.0 / 255.0);
__device__ __forceinline__ float4 pixel_floats(unsigned w) {
    return make_float4(__fmul_rn((float)(w & 0xffu), kPixelScale), __fmul_rn((float)((w >> 8) & 0xffu), kPixelScale),
                       __fmul_rn((float)((w >> 16) & 0xffu), kPixelScale), __fmul_rn((float)(w >> 24), kPixelScale));
}

// Round to the nearest tf32 (ties away from zero), as bits of an fp32: two integer
// instructions instead of cvt.rna.tf32.f32. Inf stays Inf, and so does a NaN unless
// the top 11 bits of its mantissa are all set: then the add carries into the sign
// bit and makes it -0. CUDA's own NaN (0x7fffffff, what arithmetic on a NaN gives)
// is one of those, so every activation a kernel stores for the tensor cores to
// multiply goes through quiet_nan first (once per value, not in the inner loops;
// guarding here made the row-block kernel 1.4-1.7x slower). Inputs: NumPy's and
// x86's NaN (0x7fc00000 and 0xffc00000) round to themselves.
__device__ __forceinline__ uint32_t tf32_round(float v) { return (__float_as_uint(v) + 0x1000u) & 0xffffe000u; }

// Any NaN as 0x7fc00000, which tf32_round keeps a NaN.
__device__ __forceinline__ float quiet_nan(float v) { return v == v ? v : __uint_as_float(0x7fc00000u); }

// v = hi + lo with hi a tf32 value and lo = v - hi (exact in fp32) rounded to
// tf32 as well: |lo| <= 2^-11 |v| loses at most 2^-11 of itself, so hi + lo is
// within ~2^-22 |v|, fp32's order. (Left unrounded, the tensor core would
// truncate lo's low bits: twice the error, and biased.)
__device__ __forceinline__ void tf32_split(float v, uint32_t& hi, uint32_t& lo) {
    hi = tf32_round(v);
    lo = tf32_round(v - __uint_as_float(hi));
}

// hi[nt] (+ lo[nt]) += A (16x8 fragment, fp32 values a) * B (the two n-tiles of
// a column pair, fp32 values b = {nt0.b0, nt0.b1, nt1.b0, nt1.b1}) with engine E.
// 3xTF32: the two small products go to `lo`, the large one to `hi` (sum them at
// the end): two short dependency chains instead of one of three.
template <Engine E>
__device__ __forceinline__ void mma_pair(float (&hi)[2][4], float (&lo)[2][4], const float (&a)[4], const float4 b) {
    static_assert(E != Engine::Fma, "tensor-core engines only");
    const float bv[4] = {b.x, b.y, b.z, b.w};
    if constexpr (E == Engine::Tf32) {
        uint32_t ar[4], br[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) ar[i] = tf32_round(a[i]), br[i] = tf32_round(bv[i]);
        mma_m16n8k8_tf32(hi[0], ar, br[0], br[1]);
        mma_m16n8k8_tf32(hi[1], ar, br[2], br[3]);
    } else {
        uint32_t ahi[4], alo[4], bhi[4], blo[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) tf32_split(a[i], ahi[i], alo[i]), tf32_split(bv[i], bhi[i], blo[i]);
#pragma unroll
        for (int nt = 0; nt < 2; ++nt) {
            mma_m16n8k8_tf32(lo[nt], alo, bhi[2 * nt], bhi[2 * nt + 1]);
            mma_m16n8k8_tf32(lo[nt], ahi, blo[2 * nt], blo[2 * nt + 1]);
            mma_m16n8k8_tf32(hi[nt], ahi, bhi[2 * nt], bhi[2 * nt + 1]);
        }
    }
}

template <int kMt>
__device__ __forceinline__ void zero(float (&acc)[kMt][2][4]) {
#pragma unroll
    for (int m = 0; m < kMt; ++m)
#pragma unroll
        for (int n = 0; n < 2; ++n) acc[m][n][0] = acc[m][n][1] = acc[m][n][2] = acc[m][n][3] = 0.0f;
}

// hi/lo[m] += A (m-tile m0 + m, the k-step at columns k0..k0+7 of `src`, row stride ld) * B (a
// column pair's fragments). One ldmatrix.x4 per m-tile brings the A fragment (rows and k0 16-byte
// aligned; a row stride of 20 mod 32 words keeps its 8-row phases free of bank conflicts).
template <int kMt, Engine E>
__device__ __forceinline__ void mma_rows(float (&hi)[kMt][2][4], float (&lo)[kMt][2][4], const float* src, int ld,
                                         int m0, int k0, const float4 b) {
    const int lane = threadIdx.x % 32, j = lane / 8;  // lane gives row lane % 8 of matrix j
    const float* base = src + (lane % 8 + 8 * (j & 1)) * ld + k0 + 4 * (j >> 1);
#pragma unroll
    for (int m = 0; m < kMt; ++m) {
        unsigned r[4];
        ldmatrix_x4(r, base + 16 * (m0 + m) * ld);
        const float a[4] = {__uint_as_float(r[0]), __uint_as_float(r[1]), __uint_as_float(r[2]), __uint_as_float(r[3])};
        mma_pair<E>(hi[m], lo[m], a, b);
    }
}

// stamp(i): the kernels' phase marks, nothing here; the probe's trace build force-includes
// native/tools/mlp_trace.cuh, which makes them globaltimer stamps.
#ifndef GEMMPAD_MLP_TRACE
__device__ __forceinline__ void stamp(int) {}
#endif

// Softmax helpers: an order-preserving map of floats to unsigned ints, so that one
// redux.sync finds a warp's maximum (NaN maps above +Inf and stays NaN).
__device__ __forceinline__ unsigned float_order(float f) {
    const unsigned b = __float_as_uint(f);
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
__device__ __forceinline__ float float_unorder(unsigned u) {
    return __uint_as_float((u & 0x80000000u) ? (u & 0x7fffffffu) : ~u);
}

// One float into another block's shared memory (both addresses from cluster_map_u32); its
// 4 bytes count towards the transaction count of that block's mbarrier `bar` on arrival.
__device__ __forceinline__ void st_async_f32(unsigned addr, float v, unsigned bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.f32 [%0], %1, [%2];\n" ::"r"(addr), "f"(v),
                 "r"(bar)
                 : "memory");
#endif
}

// Two adjacent floats (8-byte aligned), as st_async_f32: 8 bytes towards `bar`.
__device__ __forceinline__ void st_async_v2_f32(unsigned addr, float a, float b, unsigned bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [%0], {%1, %2}, [%3];\n" ::"r"(addr),
                 "f"(a), "f"(b), "r"(bar)
                 : "memory");
#endif
}

// Four adjacent floats (16-byte aligned), as st_async_f32: 16 bytes towards `bar`.
__device__ __forceinline__ void st_async_v4_f32(unsigned addr, float4 v, unsigned bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%0], {%1, %2, %3, %4}, [%5];\n" ::"r"(
                     addr),
                 "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w), "r"(bar)
                 : "memory");
#endif
}

}  // namespace gemmpad::cuda
