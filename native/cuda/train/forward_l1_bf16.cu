// train forward_l1_bf16: layer-1 forward on tensor cores (mixed precision), replacing forward_l1_fp32.
// Change from forward_l1_fp32: bf16 operands (a copy of the dataset made at upload, a copy of W1 that
// grad_update_bf16 refreshes), 16x16x16 WMMA tiles with fp32 accumulation; the 16 gathered rows staged in
// shared memory. bf16 keeps fp32's exponent range, so no loss scaling.
// Limit: at these sizes latency, not math: level with forward_l1_fp32 at batch 64.
// Run: gemmpad bench train --batches 64 256 --parity-epochs 0
// Profile: ncu -k regex:forward_l1_bf16 -c 20 gemmpad bench train --batches 64 --epochs 1 --torch-epochs 1 --parity-epochs 0
// Figure (H200 2026-12-01, assets/benchmarks/h200/train.json): native mixed: 3.9 us per launch at batch 64, 4.2 at batch 256 (forward_l1_us)
#include <mma.h>

#include "train.cuh"

namespace gemmpad::cuda::train {
namespace {

using namespace nvcuda;

constexpr int WARPS = PN / 16;  // 7

__global__ void __launch_bounds__(WARPS * 32) forward_l1_bf16(DeviceState s, int offset, int rows) {
    __shared__ alignas(32) __nv_bfloat16 xs[16 * KSLICE];  // [16 rows][112 k]
    const int b0 = blockIdx.x * 16, slice = blockIdx.y, t = threadIdx.x, warp = t / 32;
    {  // 16 rows x 14 uint4 (8 bf16 each) = 224 loads: one per thread
        const int r = t / 14, q = t % 14, b = b0 + r;
        uint4 v = make_uint4(0u, 0u, 0u, 0u);
        if (b < rows)
            v = *reinterpret_cast<const uint4*>(s.xb + (size_t)s.perm[offset + b] * IN + slice * KSLICE + q * 8);
        *reinterpret_cast<uint4*>(xs + r * KSLICE + q * 8) = v;
    }
    __syncthreads();
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> bfr;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
#pragma unroll
    for (int kk = 0; kk < KSLICE; kk += 16) {
        wmma::load_matrix_sync(a, xs + kk, KSLICE);
        wmma::load_matrix_sync(bfr, s.w1b + (size_t)(slice * KSLICE + kk) * PN + warp * 16, PN);
        wmma::mma_sync(acc, a, bfr, acc);
    }
    // part has batch_pad (multiple of 16) rows and PN columns, so the whole tile
    // fits; rows >= `rows` and columns >= 100 hold zeros nobody reads.
    wmma::store_matrix_sync(s.part + ((size_t)slice * s.batch_pad + b0) * PN + warp * 16, acc, PN, wmma::mem_row_major);
}

}  // namespace

void launch_forward_l1_bf16(const DeviceState& s, int offset, int rows, cudaStream_t st) {
    const dim3 grid(ceil_div(rows, 16), KSLICES);
    forward_l1_bf16<<<grid, WARPS * 32, 0, st>>>(s, offset, rows);
    CUDA_CHECK_LAUNCH("train.forward_l1_bf16");
}

}  // namespace gemmpad::cuda::train
