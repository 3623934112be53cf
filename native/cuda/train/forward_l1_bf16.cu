// train forward_l1_bf16: layer-1 forward on tensor cores (mixed precision), replacing forward_l1_fp32.
//
// What changed from forward_l1_fp32: operands are bf16 (a bf16 copy of the dataset made
// once at upload, and a bf16 copy of W1 that grad_update_bf16 rewrites after every
// update from the fp32 master weights); the products run as 16 x 16 x 16 WMMA
// tiles with fp32 accumulation. A block is 16 batch rows x all 112 (padded)
// columns x one K slice of 112: the 16 gathered rows are staged in shared
// memory (WMMA loads need a fixed row stride, a gather has none), each of the
// 7 warps owns one 16-column tile and reads W1's bf16 copy straight from
// global memory (row stride 112 keeps every tile 32-byte aligned).
// Why bf16 and not fp16: gradients of a mean loss are ~1e-6 and bf16 keeps
// fp32's exponent range, so no loss scaling is needed.
// Why it should be faster than forward_l1_fp32: half the bytes per operand and 8x the math rate.
// What holds it back: at these sizes latency, not math: level with forward_l1_fp32 at batch 64
// (4.2 us), 5.4 against 6.1 us at 256.
// Measured: 4.2 us per launch at batch 64, 5.4 at batch 256
// (native mixed, forward_l1_us in assets/benchmarks/h200/train.json).
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
