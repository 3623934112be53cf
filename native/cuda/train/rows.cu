// train rows: everything row-local in one launch, 4 batch rows per block: sum of forward_l1's K slices,
// bias, ReLU, layers 2-3, softmax cross-entropy (or soft targets) and the backward deltas dZ3 -> dZ1.
// Change from one kernel per op: the 100x100 and 100x10 layers cannot fill a GPU and each result feeds
// only the same row's next op, so all stay in shared memory: a framework's eleven ops become one launch;
// W2 (row stride 101, conflict-free transposed walk) and W3 loaded once per block, used four times.
// Limit: latency (two dependent 100-step dot loops, one W2 load): the largest of the three kernels at batch 64.
// Run: gemmpad bench train --batches 64 256 --parity-epochs 0
// Profile: ncu -k regex:rows_kernel -c 20 gemmpad bench train --batches 64 --epochs 1 --torch-epochs 1 --parity-epochs 0
// Figure (H200 2026-12-01, assets/benchmarks/h200/train.json): native fp32: 6.2 us per launch at batch 64, 6.5 at batch 256 (rows_us)
#include "rows.cuh"

namespace gemmpad::cuda::train {
namespace {

constexpr int R = 4;  // rows a block (8 took 7.6-8.1 us a launch at batch 64-256: NOTES.md, 2026-12-01)

template <bool MIXED>
__global__ void __launch_bounds__(ROWS_THREADS) rows_kernel(DeviceState s, int offset, int rows) {
    extern __shared__ __align__(16) float smem[];
    rows_block<MIXED, KSLICES, R>(s, offset, rows, blockIdx.x, smem);
}

}  // namespace

void setup_rows_kernel() {
    CUDA_CHECK(cudaFuncSetAttribute(rows_kernel<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)ROWS_SMEM_BYTES));
    CUDA_CHECK(cudaFuncSetAttribute(rows_kernel<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)ROWS_SMEM_BYTES));
}

void launch_rows(const DeviceState& s, int offset, int rows, bool mixed, cudaStream_t st) {
    const int blocks = ceil_div(rows, R);
    if (mixed) rows_kernel<true><<<blocks, ROWS_THREADS, ROWS_SMEM_BYTES, st>>>(s, offset, rows);
    else rows_kernel<false><<<blocks, ROWS_THREADS, ROWS_SMEM_BYTES, st>>>(s, offset, rows);
    CUDA_CHECK_LAUNCH("train.rows");
}

}  // namespace gemmpad::cuda::train
