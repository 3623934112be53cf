// cuda.mlp_fused / cuda.mlp_fused_tf32: the whole 784-100-100-10 network in ONE launch.
//
// What changed (from running the ladder layer by layer): one kernel does
// layer 1, layer 2, layer 3 and the softmax; activations never leave shared
// memory between layers, and there is one launch instead of four (plus casts).
// Why it should be faster: at batch 1 the ladder pays ~4 launches and their
// gaps for ~90 KFLOP of work; here the launch is the cost. The tiny-cuda-nn
// "fully fused MLP" idea, adapted to a first layer too wide for one block:
//
//   * The batch is cut into tiles of BM rows (16 for small batches, 64 for
//     large ones). Layer 1's K = 784 is cut into 7 chunks of 112: each
//     (tile, chunk) pair is one block, so even batch 1 spreads W1 (313 KB)
//     over 7 SMs instead of streaming it through one.
//   * Each block writes its partial layer-1 sums to global scratch, fences,
//     and bumps the tile's arrival counter; the LAST block of the tile to
//     arrive (threadFenceReduction pattern, works on every arch, no cluster or
//     cooperative launch needed) sums the 7 partials, applies bias + ReLU and
//     runs layers 2, 3 and the softmax from shared memory, then resets the
//     counter for the next launch.
//   * Products run on tensor cores through WMMA m16n16k8 tf32 fragments. The
//     fp32 kernel uses 3xTF32 (a = a_hi + a_lo, b = b_hi + b_lo; a*b ~ a_hi*b_hi
//     + a_hi*b_lo + a_lo*b_hi), which restores fp32 accuracy at 3x the tensor
//     work; the tf32 kernel does one pass. The split happens in registers so
//     every block reads the fp32 weights once (L2 bandwidth is the limit at
//     large batches: each tile reads all of W1).
//   * Widths are zero-padded to multiples of 16 at upload (100 -> 112, 10 -> 16),
//     so no kernel code handles ragged tiles; rows past the batch are zero-filled
//     in shared memory and never stored.
// Input and output may live in mapped pinned host memory: at small batches the
// kernel itself fetches x over PCIe and writes the probabilities back, so a
// call is one launch and one event wait.
// Measured: see README "Benchmarks" (`gemmpad bench mlp`).
#include <mma.h>

#include "mlp.cuh"

namespace gemmpad::cuda {
namespace {

using namespace nvcuda;

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kLds = kChunk + 4;  // shared-memory row stride (floats): a multiple of 4, skews banks

using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major>;
using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major>;
using FragC = wmma::fragment<wmma::accumulator, 16, 16, 8, float>;

// acc += A[16x8] @ B[8x16]; A from shared memory, B (weights) from global/L2.
template <bool kSplit3>
__device__ __forceinline__ void mma_step(FragC& acc, const float* a_ptr, int lda, const float* b_ptr, int ldb) {
    FragA a_hi, a_lo;
    FragB b_hi, b_lo;
    wmma::load_matrix_sync(a_hi, a_ptr, lda);
    wmma::load_matrix_sync(b_hi, b_ptr, ldb);
    if constexpr (kSplit3) {
#pragma unroll
        for (int i = 0; i < a_hi.num_elements; ++i) {
            const float v = a_hi.x[i];
            a_hi.x[i] = wmma::__float_to_tf32(v);
            a_lo.x[i] = wmma::__float_to_tf32(v - a_hi.x[i]);
        }
#pragma unroll
        for (int i = 0; i < b_hi.num_elements; ++i) {
            const float v = b_hi.x[i];
            b_hi.x[i] = wmma::__float_to_tf32(v);
            b_lo.x[i] = wmma::__float_to_tf32(v - b_hi.x[i]);
        }
        // Small terms first so they are not lost against the large one.
        wmma::mma_sync(acc, a_lo, b_hi, acc);
        wmma::mma_sync(acc, a_hi, b_lo, acc);
        wmma::mma_sync(acc, a_hi, b_hi, acc);
    } else {
#pragma unroll
        for (int i = 0; i < a_hi.num_elements; ++i) a_hi.x[i] = wmma::__float_to_tf32(a_hi.x[i]);
#pragma unroll
        for (int i = 0; i < b_hi.num_elements; ++i) b_hi.x[i] = wmma::__float_to_tf32(b_hi.x[i]);
        wmma::mma_sync(acc, a_hi, b_hi, acc);
    }
}

// dst[BM, 112] (shared, stride kLds) = src[BM, 112] (shared) @ W[112, 112], all
// (row tile, column tile) pairs spread over the warps.
template <int BM, bool kSplit3>
__device__ __forceinline__ void hidden_layer(const float* src, const float* __restrict__ w, float* dst) {
    constexpr int kRowTiles = BM / 16, kColTiles = kHiddenPad / 16;
    const int warp = threadIdx.x / 32;
    for (int item = warp; item < kRowTiles * kColTiles; item += kWarps) {
        const int rt = item % kRowTiles, ct = item / kRowTiles;
        FragC acc;
        wmma::fill_fragment(acc, 0.0f);
#pragma unroll 2
        for (int k = 0; k < kHiddenPad; k += 8)
            mma_step<kSplit3>(acc, src + rt * 16 * kLds + k, kLds, w + (size_t)k * kHiddenPad + ct * 16, kHiddenPad);
        wmma::store_matrix_sync(dst + rt * 16 * kLds + ct * 16, acc, kLds, wmma::mem_row_major);
    }
}

// In place: h = relu(h + bias) over BM x 112 (padding columns stay 0: zero weights, zero bias).
template <int BM>
__device__ __forceinline__ void bias_relu(float* h, const float* __restrict__ bias) {
    for (int i = threadIdx.x; i < BM * kHiddenPad; i += kThreads) {
        const int r = i / kHiddenPad, c = i % kHiddenPad;
        h[r * kLds + c] = epilogue(h[r * kLds + c], bias, c, Act::Relu);
    }
}

template <int BM, bool kSplit3>
__global__ void __launch_bounds__(kThreads)
    fused_mlp_kernel(FusedWeights w, const float* __restrict__ x, float* __restrict__ out, int batch,
                     float* __restrict__ partials, unsigned* __restrict__ counters) {
    constexpr int kRowTiles = BM / 16, kColTiles = kHiddenPad / 16;
    constexpr int kItems = kRowTiles * kColTiles;
    constexpr int kPerWarp = (kItems + kWarps - 1) / kWarps;
    extern __shared__ __align__(128) float smem[];
    float* xs = smem;               // [BM, kLds]: the x chunk, later h2
    float* hs = xs + BM * kLds;     // [BM, kLds]: h1
    float* ls = hs + BM * kLds;     // [BM, 16]: logits
    __shared__ bool is_last;

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int tile = blockIdx.x / kChunks, chunk = blockIdx.x % kChunks;
    const int row0 = tile * BM;

    // ---- stage x[row0 : row0+BM, chunk*112 : +112] (float4; rows past the batch are 0)
    for (int i = threadIdx.x; i < BM * (kChunk / 4); i += kThreads) {
        const int r = i / (kChunk / 4), q = i % (kChunk / 4);
        float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
        if (row0 + r < batch) v = *reinterpret_cast<const float4*>(x + (size_t)(row0 + r) * kIn + chunk * kChunk + q * 4);
        *reinterpret_cast<float4*>(xs + r * kLds + q * 4) = v;
    }
    __syncthreads();

    // ---- layer 1, this chunk of K: partial[BM, 112] = x_chunk @ W1[chunk rows]
    float* part = partials + ((size_t)tile * kChunks + chunk) * BM * kHiddenPad;
    const float* w1 = w.w1 + (size_t)chunk * kChunk * kHiddenPad;
#pragma unroll
    for (int j = 0; j < kPerWarp; ++j) {
        const int item = warp + j * kWarps;
        if (item < kItems) {  // warp-uniform
            const int rt = item % kRowTiles, ct = item / kRowTiles;
            FragC acc;
            wmma::fill_fragment(acc, 0.0f);
#pragma unroll 2
            for (int k = 0; k < kChunk; k += 8)
                mma_step<kSplit3>(acc, xs + rt * 16 * kLds + k, kLds, w1 + (size_t)k * kHiddenPad + ct * 16, kHiddenPad);
            wmma::store_matrix_sync(part + rt * 16 * kHiddenPad + ct * 16, acc, kHiddenPad, wmma::mem_row_major);
        }
    }

    // ---- the last block of this tile to finish goes on; the others are done
    __threadfence();  // make this block's partials visible device-wide before counting in
    __syncthreads();
    if (threadIdx.x == 0) is_last = atomicAdd(&counters[tile], 1u) == kChunks - 1;
    __syncthreads();
    if (!is_last) return;
    __threadfence();  // order the reads below after every other block's fence + count

    const float* tile_parts = partials + (size_t)tile * kChunks * BM * kHiddenPad;
    for (int i = threadIdx.x; i < BM * kHiddenPad; i += kThreads) {
        float s = 0.0f;
#pragma unroll
        for (int p = 0; p < kChunks; ++p) s += __ldcg(tile_parts + (size_t)p * BM * kHiddenPad + i);  // L2, not stale L1
        hs[(i / kHiddenPad) * kLds + i % kHiddenPad] = s;
    }
    if (threadIdx.x == 0) counters[tile] = 0;  // ready for the next launch on this stream
    __syncthreads();
    bias_relu<BM>(hs, w.b1);
    __syncthreads();

    // ---- layer 2: h2 = relu(h1 @ W2 + b2), into xs (the x chunk is no longer needed)
    hidden_layer<BM, kSplit3>(hs, w.w2, xs);
    __syncthreads();
    bias_relu<BM>(xs, w.b2);
    __syncthreads();

    // ---- layer 3: logits = h2 @ W3 (+ b3 in the softmax below)
    for (int rt = warp; rt < kRowTiles; rt += kWarps) {
        FragC acc;
        wmma::fill_fragment(acc, 0.0f);
#pragma unroll 2
        for (int k = 0; k < kHiddenPad; k += 8)
            mma_step<kSplit3>(acc, xs + rt * 16 * kLds + k, kLds, w.w3 + (size_t)k * kOutPad, kOutPad);
        wmma::store_matrix_sync(ls + rt * 16 * kOutPad, acc, kOutPad, wmma::mem_row_major);
    }
    __syncthreads();

    // ---- softmax, one warp per row; lanes 0..9 hold the ten logits
    for (int r = warp; r < BM; r += kWarps) {
        if (row0 + r >= batch) break;  // warp-uniform; rows only grow with r
        const float v = lane < kOut ? ls[r * kOutPad + lane] + w.b3[lane] : -INFINITY;
        float m = v;
#pragma unroll
        for (int off = 16; off > 0; off /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
        const float e = lane < kOut ? expf(v - m) : 0.0f;
        float sum = e;
#pragma unroll
        for (int off = 16; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
        if (lane < kOut) out[(size_t)(row0 + r) * kOut + lane] = e / sum;
    }
}

// Small batches: 16-row tiles, so batch 1 wastes least. Large batches: 64-row
// tiles, so W1 is read from L2 a quarter as often.
constexpr int kSmallBatchMax = 512;

template <int BM>
constexpr size_t smem_bytes() {
    return (size_t)(2 * BM * kLds + BM * kOutPad) * sizeof(float);
}

template <int BM, bool kSplit3>
void launch_config(const FusedWeights& w, const float* x, float* out, int batch, const FusedScratch& s,
                   cudaStream_t stream) {
    static bool configured = false;  // one host thread drives the GPU (common.cuh)
    constexpr size_t smem = smem_bytes<BM>();
    if (!configured) {
        if (smem > max_smem_per_block_optin())
            throw std::runtime_error("cuda.mlp_fused needs " + std::to_string(smem) +
                                     " bytes of shared memory per block; this device allows " +
                                     std::to_string(max_smem_per_block_optin()));
        CUDA_CHECK(cudaFuncSetAttribute(fused_mlp_kernel<BM, kSplit3>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        (int)smem));
        configured = true;
    }
    const int tiles = ceil_div(batch, BM);
    fused_mlp_kernel<BM, kSplit3><<<tiles * kChunks, kThreads, smem, stream>>>(w, x, out, batch, s.partials, s.counters);
    CUDA_CHECK_LAUNCH(kSplit3 ? "cuda.mlp_fused" : "cuda.mlp_fused_tf32");
}

}  // namespace

std::pair<size_t, int> fused_scratch_size(int batch) {
    const int bm = batch <= kSmallBatchMax ? 16 : 64;
    const int tiles = ceil_div(batch, bm);
    return {(size_t)tiles * kChunks * bm * kHiddenPad, tiles};
}

void launch_fused_mlp(const FusedWeights& w, const float* x, float* out, int batch, bool split3,
                      const FusedScratch& scratch, cudaStream_t stream) {
    if (batch < 1) throw std::invalid_argument("batch must be >= 1");
    if (batch <= kSmallBatchMax) {
        if (split3) launch_config<16, true>(w, x, out, batch, scratch, stream);
        else launch_config<16, false>(w, x, out, batch, scratch, stream);
    } else {
        if (split3) launch_config<64, true>(w, x, out, batch, scratch, stream);
        else launch_config<64, false>(w, x, out, batch, scratch, stream);
    }
}

const std::vector<MlpKernelInfo>& mlp_kernel_list() {
    static const std::vector<MlpKernelInfo> list = {
        {"cuda.mlp_fused", "fp32",
         "whole network in one launch: split-K layer 1 over 7 blocks, last block runs layers 2-3 + softmax; "
         "3xTF32 tensor cores",
         repo_path(__FILE__)},
        {"cuda.mlp_fused_tf32", "tf32", "the fused network with one tf32 tensor-core pass (3x less tensor work)",
         repo_path(__FILE__)},
    };
    return list;
}

}  // namespace gemmpad::cuda
