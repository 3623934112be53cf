// cuda.mlp_fused_3xtf32 / cuda.mlp_fused_tf32: the whole 784-100-100-10 network in ONE
// launch on tensor cores. (Until 2026-11-22 this was cuda.mlp_fused; the CUDA-core
// kernel of fused_mlp.cu replaced it as the default, see there.)
//
// What changed (from running the ladder layer by layer): one kernel does
// layer 1, layer 2, layer 3 and the softmax; activations never leave shared
// memory between layers, and there is one launch instead of four (plus casts).
// Why it should be faster: at batch 1 the ladder pays ~4 launches and their
// gaps for ~90 KFLOP of work; here the launch is the cost. The tiny-cuda-nn
// "fully fused MLP" idea, adapted to a first layer too wide for one block:
//
//   * The batch is cut into tiles of BM rows (16 for small batches, 32 for
//     large ones). Layer 1's K = 784 is cut into 7 chunks of 112: each
//     (tile, chunk) pair is one block, so even batch 1 spreads W1 (313 KB)
//     over 7 SMs instead of streaming it through one.
//   * Each block copies its 112x112 slice of W1 into shared memory with
//     cp.async (all loads in flight at once), multiplies, writes its partial
//     layer-1 sums to global scratch, fences, and bumps the tile's arrival
//     counter; the LAST block of the tile to arrive (threadFenceReduction
//     pattern: works on every arch, no cluster or cooperative launch needed)
//     starts W2's copy into the same shared buffer, sums the 7 partials while
//     it flies, applies bias + ReLU, runs layers 2 and 3 and the softmax from
//     shared memory, then resets the counter for the next launch.
//   * Products run on tensor cores through WMMA m16n16k8 tf32 fragments. The
//     fp32 kernel uses 3xTF32 (a = a_hi + a_lo, b = b_hi + b_lo; a*b ~ a_hi*b_hi
//     + a_hi*b_lo + a_lo*b_hi, the small terms in their own accumulator), which
//     restores fp32 accuracy at 3x the tensor work; the tf32 kernel does one
//     pass. The split happens in registers so the weights stay plain fp32.
//   * Widths are zero-padded to multiples of 16 at upload (100 -> 112, 10 -> 16),
//     so no kernel code handles ragged tiles; rows past the batch are zero-filled
//     in shared memory and never stored.
// Input and output may live in mapped pinned host memory: at small batches the
// kernel itself fetches x over PCIe and writes the probabilities back, so a
// call is one launch and one event wait.
// History: the first version loaded every B fragment straight from L2 inside
// the k loop (one dependent round trip per k-step, three times per layer) and
// measured 28.9 us kernel / 37.4 us end to end at batch 1 on an H200 (torch
// CUDA graph: 14.9 / 47.5), 103 us at batch 4096; hence the staging above.
// Measured (H200, driver 580.159.04, CUDA 13.0, 2026-11-22, `gemmpad bench mlp`,
// an earlier run; current figures in assets/benchmarks/h200/): kernel / end-to-end us
//   batch 1:    fused 19.4 / 27.4, fused_tf32 17.2 / 25.5; torch CUDA graph 16.1 / 58.8, eager 93.4 / 122.7
//   batch 256:  fused 20.4 / 98.7, fused_tf32 17.9 / 103.1; torch CUDA graph 32.6 / 137.3
//   batch 4096: fused 75.7, fused_tf32 57.2; torch CUDA graph 51.0
// Re-measured 2026-11-22 (same H200, launched from mlp.cu's captured CUDA graph,
// so the events no longer include the host's launch call), kernel / end to end:
//   3xtf32: batch 1 16.9 / 25.6, batch 256 22.1, batch 4096 73.7 us;
//   tf32:   batch 1 14.2 / 22.9, batch 256 19.8, batch 4096 56.2 us.
// cuda.mlp_fused (fused_mlp.cu) now runs CUDA cores up to batch 512 and this
// kernel's 3xTF32 variant beyond.
// Short of the issue's goals (batch 1: 4 us kernel / 12 us end to end; 5 us at
// 256, 15 us at 4096). Still to try: a 14-way split of K (half the k-steps on
// the critical path), thread-block clusters with DSMEM instead of the global
// partials + counter on sm_90, and 64-row tiles at large batches.
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

// 16-byte asynchronous copy global -> shared (sm_80+): the loads of a whole
// weight tile go out at once instead of one dependent L2 round trip per k-step.
__device__ __forceinline__ void cp_async16(void* smem_dst, const void* gmem_src) {
    const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem_dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(gmem_src));
}
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::); }

// dst[112, kLds] (shared) <- src[112, 112] (global, row-major), issued by the whole block.
__device__ __forceinline__ void stage_weights(float* dst, const float* __restrict__ src) {
    constexpr int kVecs = kHiddenPad / 4;  // float4 per row
    for (int i = threadIdx.x; i < kHiddenPad * kVecs; i += kThreads) {
        const int r = i / kVecs, q = i % kVecs;
        cp_async16(dst + r * kLds + q * 4, src + (size_t)r * kHiddenPad + q * 4);
    }
}

// Two accumulators per output tile: `hi` collects a_hi*b_hi, `lo` the two
// correction terms of 3xTF32. Separate chains also give the tensor cores
// independent work (a k-step is 2 dependent mma instead of 3).
struct Acc {
    FragC hi, lo;
    __device__ __forceinline__ void zero() {
        wmma::fill_fragment(hi, 0.0f);
        wmma::fill_fragment(lo, 0.0f);
    }
    __device__ __forceinline__ void store(float* dst, int ld) {
#pragma unroll
        for (int i = 0; i < hi.num_elements; ++i) hi.x[i] += lo.x[i];
        wmma::store_matrix_sync(dst, hi, ld, wmma::mem_row_major);
    }
};

// acc += A[16x8] @ B[8x16], both from shared memory.
template <bool kSplit3>
__device__ __forceinline__ void mma_step(Acc& acc, const float* a_ptr, int lda, const float* b_ptr, int ldb) {
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
        wmma::mma_sync(acc.lo, a_lo, b_hi, acc.lo);
        wmma::mma_sync(acc.lo, a_hi, b_lo, acc.lo);
        wmma::mma_sync(acc.hi, a_hi, b_hi, acc.hi);
    } else {
#pragma unroll
        for (int i = 0; i < a_hi.num_elements; ++i) a_hi.x[i] = wmma::__float_to_tf32(a_hi.x[i]);
#pragma unroll
        for (int i = 0; i < b_hi.num_elements; ++i) b_hi.x[i] = wmma::__float_to_tf32(b_hi.x[i]);
        wmma::mma_sync(acc.hi, a_hi, b_hi, acc.hi);
    }
}

// dst[BM, 112] = src[BM, 112] @ ws[112, 112]; all three in shared memory
// (stride kLds); (row tile, column tile) pairs spread over the warps.
template <int BM, bool kSplit3>
__device__ __forceinline__ void tile_product(const float* src, const float* ws, float* dst, int ld_dst) {
    constexpr int kRowTiles = BM / 16, kColTiles = kHiddenPad / 16;
    const int warp = threadIdx.x / 32;
    for (int item = warp; item < kRowTiles * kColTiles; item += kWarps) {
        const int rt = item % kRowTiles, ct = item / kRowTiles;
        Acc acc;
        acc.zero();
#pragma unroll
        for (int k = 0; k < kHiddenPad; k += 8)
            mma_step<kSplit3>(acc, src + rt * 16 * kLds + k, kLds, ws + k * kLds + ct * 16, kLds);
        acc.store(dst + rt * 16 * ld_dst + ct * 16, ld_dst);
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
    constexpr int kRowTiles = BM / 16;
    constexpr int kKGroups = kHiddenPad / 16;  // layer 3 splits its K over 7 warps, 2 k-steps each
    static_assert(kKGroups * 16 <= kLds, "layer-3 partial logits must fit in the h1 buffer");
    extern __shared__ __align__(128) float smem[];
    float* xs = smem;                 // [BM, kLds]: the x chunk, later h2
    float* hs = xs + BM * kLds;       // [BM, kLds]: h1, later layer-3 partial logits [7][BM, 16]
    float* ws = hs + BM * kLds;       // [112, kLds]: the W1 chunk, later W2
    __shared__ bool is_last;

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int tile = blockIdx.x / kChunks, chunk = blockIdx.x % kChunks;
    const int row0 = tile * BM;

    // ---- stage this chunk of W1 (async) and of x (float4; rows past the batch are 0)
    stage_weights(ws, w.w1 + (size_t)chunk * kChunk * kHiddenPad);
    for (int i = threadIdx.x; i < BM * (kChunk / 4); i += kThreads) {
        const int r = i / (kChunk / 4), q = i % (kChunk / 4);
        float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
        if (row0 + r < batch) v = *reinterpret_cast<const float4*>(x + (size_t)(row0 + r) * kIn + chunk * kChunk + q * 4);
        *reinterpret_cast<float4*>(xs + r * kLds + q * 4) = v;
    }
    cp_async_wait_all();
    __syncthreads();

    // ---- layer 1, this chunk of K: partial[BM, 112] = x_chunk @ W1[chunk rows], to global scratch
    float* part = partials + ((size_t)tile * kChunks + chunk) * BM * kHiddenPad;
    tile_product<BM, kSplit3>(xs, ws, part, kHiddenPad);

    // ---- the last block of this tile to finish goes on; the others are done
    __threadfence();  // make this block's partials visible device-wide before counting in
    __syncthreads();  // also: every warp is done with ws
    if (threadIdx.x == 0) is_last = atomicAdd(&counters[tile], 1u) == kChunks - 1;
    __syncthreads();
    if (!is_last) return;
    __threadfence();  // order the reads below after every other block's fence + count

    stage_weights(ws, w.w2);  // W2 streams in while the partials are summed
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
    cp_async_wait_all();
    __syncthreads();

    // ---- layer 2: h2 = relu(h1 @ W2 + b2), into xs (the x chunk is no longer needed)
    tile_product<BM, kSplit3>(hs, ws, xs, kLds);
    __syncthreads();
    bias_relu<BM>(xs, w.b2);
    __syncthreads();

    // ---- layer 3: partial logits per group of 16 k (W3 is 7 KB: read from L2/L1 directly)
    float* ls = hs;  // h1 is no longer needed
    for (int item = warp; item < kRowTiles * kKGroups; item += kWarps) {
        const int rt = item % kRowTiles, g = item / kRowTiles;
        Acc acc;
        acc.zero();
#pragma unroll
        for (int k = g * 16; k < g * 16 + 16; k += 8) {
            // B straight from global: ldm 16 floats, tiles 32-byte aligned.
            FragA a_hi, a_lo;
            FragB b_hi, b_lo;
            wmma::load_matrix_sync(a_hi, xs + rt * 16 * kLds + k, kLds);
            wmma::load_matrix_sync(b_hi, w.w3 + (size_t)k * kOutPad, kOutPad);
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
            if constexpr (kSplit3) {
                wmma::mma_sync(acc.lo, a_lo, b_hi, acc.lo);
                wmma::mma_sync(acc.lo, a_hi, b_lo, acc.lo);
            }
            wmma::mma_sync(acc.hi, a_hi, b_hi, acc.hi);
        }
        acc.store(ls + g * BM * kOutPad + rt * 16 * kOutPad, kOutPad);
    }
    __syncthreads();

    // ---- softmax, one warp per row; lanes 0..9 hold the ten logits
    for (int r = warp; r < BM; r += kWarps) {
        if (row0 + r >= batch) break;  // warp-uniform; rows only grow with r
        float v = -INFINITY;
        if (lane < kOut) {
            v = w.b3[lane];
#pragma unroll
            for (int g = 0; g < kKGroups; ++g) v += ls[g * BM * kOutPad + r * kOutPad + lane];
        }
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

// Small batches: 16-row tiles, so batch 1 wastes least. Large batches: 32-row
// tiles, so W1 is read from L2 half as often (64 would not fit 99 KB of shared memory).
constexpr int kSmallBatchMax = 512;
constexpr int kLargeTile = 32;

template <int BM>
constexpr size_t smem_bytes() {
    return (size_t)(2 * BM * kLds + kHiddenPad * kLds) * sizeof(float);
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
    CUDA_CHECK_LAUNCH(kSplit3 ? "cuda.mlp_fused_3xtf32" : "cuda.mlp_fused_tf32");
}

}  // namespace

std::pair<size_t, int> fused_tc_scratch_size(int batch) {
    const int bm = batch <= kSmallBatchMax ? 16 : kLargeTile;
    const int tiles = ceil_div(batch, bm);
    return {(size_t)tiles * kChunks * bm * kHiddenPad, tiles};
}

void launch_fused_mlp_tc(const FusedWeights& w, const float* x, float* out, int batch, bool split3,
                         const FusedScratch& scratch, cudaStream_t stream) {
    if (batch < 1) throw std::invalid_argument("batch must be >= 1");
    if (batch <= kSmallBatchMax) {
        if (split3) launch_config<16, true>(w, x, out, batch, scratch, stream);
        else launch_config<16, false>(w, x, out, batch, scratch, stream);
    } else {
        if (split3) launch_config<kLargeTile, true>(w, x, out, batch, scratch, stream);
        else launch_config<kLargeTile, false>(w, x, out, batch, scratch, stream);
    }
}

std::string fused_tc_source() { return repo_path(__FILE__); }

}  // namespace gemmpad::cuda
