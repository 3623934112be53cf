// train grad_update_bf16: weight gradients and SGD step in mixed precision, replacing grad_update_fp32.
// Change from grad_update_fp32: dW1 = X^T dZ1 (784 x 100 over the batch) on tensor cores: block i stages
// 16 columns of the gathered X, 7 warps multiply by dZ1's bf16 strips; fp32 master weights updated and
// W1's bf16 copy refreshed; bias 1 and layers 2-3 keep the fp32 tiles in the same launch.
// Limit: 49 blocks for W1 instead of 100, so at batch 64 it is slower than grad_update_fp32.
// Run: gemmpad bench train --batches 64 256 --parity-epochs 0
// Profile: ncu -k regex:grad_update_bf16 -c 20 gemmpad bench train --batches 64 --epochs 1 --torch-epochs 1 --parity-epochs 0
// Figure (H200 2026-12-01, assets/benchmarks/h200/train.json): native mixed: 5.4 us per launch at batch 64, 8.4 at batch 256 (grad_update_us)
#include <mma.h>

#include "grad_tile.cuh"

namespace gemmpad::cuda::train {
namespace {

using namespace nvcuda;

constexpr int W1_BLOCKS = IN / 16;  // 49
constexpr int CHUNK = 128;          // batch rows staged per pass

__global__ void __launch_bounds__(TILE_THREADS) grad_update_bf16(DeviceState s, int offset, int rows) {
    const Hyper h = *s.hyper;
    if (blockIdx.x >= W1_BLOCKS) {
        __shared__ alignas(16) GradSmem sm;
        int layer, i0, j0;
        grad_job(blockIdx.x - W1_BLOCKS, IN, layer, i0, j0);
        grad_tile_update(s, layer, i0, j0, offset, rows, h, sm);
        return;
    }
    __shared__ alignas(32) __nv_bfloat16 xs[CHUNK * 16];  // [b][i]: column-major 16 x CHUNK
    __shared__ alignas(32) float cs[7][16 * 16];
    const int i0 = blockIdx.x * 16, t = threadIdx.x, warp = t / 32, lane = t % 32;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::col_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> bfr;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int c0 = 0; c0 < rows; c0 += CHUNK) {
        {  // CHUNK rows x 2 uint4 (16 bf16) = 256 loads: one per thread
            const int r = t / 2, q = t % 2, b = c0 + r;
            uint4 v = make_uint4(0u, 0u, 0u, 0u);
            if (b < rows) v = *reinterpret_cast<const uint4*>(s.xb + (size_t)s.perm[offset + b] * IN + i0 + q * 8);
            *reinterpret_cast<uint4*>(xs + r * 16 + q * 8) = v;
        }
        __syncthreads();
        if (warp < 7) {
            // rows past `rows` are zero in xs, so the stale dZ1 rows they meet add nothing
            const int kend = min(CHUNK, (rows - c0 + 15) / 16 * 16);
            for (int kk = 0; kk < kend; kk += 16) {
                wmma::load_matrix_sync(a, xs + kk * 16, 16);
                wmma::load_matrix_sync(bfr, s.dz1b + (size_t)(c0 + kk) * PN + warp * 16, PN);
                wmma::mma_sync(acc, a, bfr, acc);
            }
        }
        __syncthreads();
    }
    if (warp < 7) {
        wmma::store_matrix_sync(cs[warp], acc, 16, wmma::mem_row_major);
        __syncwarp();
        for (int e = lane; e < 256; e += 32) {
            const int i = i0 + e / 16, j = warp * 16 + e % 16;
            if (j >= H1) continue;
            const float np = sgd_update(s.w1 + (size_t)i * H1 + j, s.v_w1 + (size_t)i * H1 + j, cs[warp][e], h,
                                        h.weight_decay);
            s.w1b[(size_t)i * PN + j] = __float2bfloat16(np);
        }
    }
}

}  // namespace

void launch_grad_update_bf16(const DeviceState& s, int offset, int rows, cudaStream_t st) {
    grad_update_bf16<<<W1_BLOCKS + grad_jobs(IN), TILE_THREADS, 0, st>>>(s, offset, rows);
    CUDA_CHECK_LAUNCH("train.grad_update_bf16");
}

}  // namespace gemmpad::cuda::train
