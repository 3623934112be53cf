// Split-K's host side (gemm/splitk.cuh): how many slices a cluster split takes, and the
// workspace reduction kernel.
#include <algorithm>

#include "../support/check.cuh"
#include "../support/device.cuh"
#include "splitk.cuh"

namespace gemmpad::cuda {

int cluster_splits(const void* kernel, int threads, size_t smem, int tiles, int k_tiles, int blocks_per_sm) {
    int s = std::min({8, k_tiles, blocks_per_sm * device_props().multiProcessorCount / std::max(tiles, 1)});
    while (s > 1 && resident_clusters(kernel, threads, smem, s) < tiles) --s;
    return s > 1 ? ceil_div(k_tiles, ceil_div(k_tiles, s)) : 1;
}

namespace {

__global__ void splitk_reduce_kernel(int M, int N, int S, const float* __restrict__ ws, const float* __restrict__ bias,
                                     float* __restrict__ C, Act act) {
    const size_t total = (size_t)M * N;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
        float s = 0.0f;
        for (int z = 0; z < S; ++z) s += ws[z * total + i];
        C[i] = epilogue(s, bias, (int)(i % N), act);
    }
}

}  // namespace

void splitk_reduce(int M, int N, int S, const float* ws, const float* bias, float* C, Act act, cudaStream_t stream) {
    const size_t total = (size_t)M * N;
    const int blocks = (int)std::min<size_t>((total + 255) / 256, 4 * (size_t)device_props().multiProcessorCount);
    splitk_reduce_kernel<<<blocks, 256, 0, stream>>>(M, N, S, ws, bias, C, act);
    CUDA_CHECK_LAUNCH("split-K reduce");
}

}  // namespace gemmpad::cuda
