// The fused MLP-layer epilogue every GEMM kernel applies at its store: bias, then ReLU (NaN
// stays NaN, as in NumPy).
#pragma once

#include <cuda_runtime.h>

#include "gemmpad/kernel.h"

namespace gemmpad::cuda {

// ReLU that keeps NaN a NaN, as NumPy's maximum(x, 0) does.
__device__ __forceinline__ float relu(float v) { return v > 0.0f ? v : (v != v ? v : 0.0f); }

// The fused MLP-layer epilogue every kernel applies at its store: bias add, then ReLU.
__device__ __forceinline__ float epilogue(float acc, const float* __restrict__ bias, int col, Act act) {
    if (bias) acc += bias[col];
    if (act == Act::Relu) acc = relu(acc);
    return acc;
}

// Stores the pair of an m16n8 accumulator fragment, row[col] and row[col + 1] of a C with N columns
// (the second only where col + 1 < N; callers skip col >= N), the epilogue applied where `apply`
// (split-K's partial sums go without): one float2 where N is even and so the pair 8-byte aligned,
// else two floats.
__device__ __forceinline__ void store_pair(float* __restrict__ row, int col, int N, float v0, float v1,
                                           const float* __restrict__ bias, Act act, bool apply = true) {
    const bool two = col + 1 < N;
    if (apply) {
        v0 = epilogue(v0, bias, col, act);
        if (two) v1 = epilogue(v1, bias, col + 1, act);
    }
    if (two && N % 2 == 0) {
        *reinterpret_cast<float2*>(row + col) = make_float2(v0, v1);
    } else {
        row[col] = v0;
        if (two) row[col + 1] = v1;
    }
}

}  // namespace gemmpad::cuda
