// The layouts in which Mlp uploads the weights (weights.cu): zero-padded to the fused kernels'
// widths, in fragment order (fused_common.cuh), and W1 as scaled fp16 for the tf32 k-split kernel.
#pragma once

#include <cuda_fp16.h>

#include <vector>

#include "mlp.cuh"

namespace gemmpad::cuda::layout {

// A host [rows, cols] matrix zero-padded to [prows, pcols].
std::vector<float> padded(const float* src, int rows, int cols, int prows, int pcols);

// A padded [K][N] matrix (K a multiple of 8, N of `cols`) in the fused kernels' fragment order.
std::vector<float> fragment_order(const std::vector<float>& m, int K, int N, int cols);

// `m` rounded to tf32 and stored as fp16 divided by `scale` (a power of two): exact for tf32 values.
std::vector<__half> tf32_as_half(const std::vector<float>& m, float& scale);

// dst <- v (device memory, grown as needed), in `stream`'s order and finished on return. A plain
// cudaMemcpy from pageable memory may return before its DMA lands, and a kernel on a non-blocking
// stream does not wait for it: Mlp's casts once read half-copied weights (NOTES.md, 2026-11-29).
template <class T>
void upload(DeviceBuffer& dst, const std::vector<T>& v, cudaStream_t stream) {
    dst.reserve(v.size() * sizeof(T));
    CUDA_CHECK(cudaMemcpyAsync(dst.ptr, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));  // v may be a temporary
}

}  // namespace gemmpad::cuda::layout
