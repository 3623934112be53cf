// train rows: everything row-local in one launch, 8 batch rows per block: sum of forward_l1's K slices,
// bias, ReLU, layers 2-3, softmax cross-entropy (or soft targets) and the backward deltas dZ3 -> dZ1.
// Change from one kernel per op: the 100x100 and 100x10 layers cannot fill a GPU and each result feeds
// only the same row's next op, so all stay in shared memory: a framework's eleven ops become one launch;
// W2 (row stride 101, conflict-free transposed walk) and W3 loaded once per block, used four times.
// Limit: latency (two dependent 100-step dot loops, one W2 load): the largest of the three kernels.
// Run: gemmpad bench train --batches 64 256 --parity-epochs 0
// Profile: ncu -k regex:rows_kernel -c 20 gemmpad bench train --batches 64 --epochs 1 --torch-epochs 1 --parity-epochs 0
// Figure (H200 2026-11-29, assets/benchmarks/h200/train.json): native fp32: 8.2 us per launch at batch 64, 8.6 at batch 256 (rows_us)
#include "train.cuh"

namespace gemmpad::cuda::train {
namespace {

constexpr int R = ROWS_PER_BLOCK;  // 8 rows = 8 warps
constexpr int THREADS = 256;
constexpr int W2S = H1 + 1;  // padded row stride of W2 in shared memory
constexpr size_t SMEM_FLOATS = (size_t)H1 * W2S + H2 * OUT + 3 * 100 * R + OUT * R;

// acc[r] += sum over k < N of x[k * R + r] * w[k * ws], r = 0..3: a thread's four rows of one
// product column. x is k-major with R floats a step, so the four rows are one float4; w walks
// a column of a weight matrix (ws = its row stride) or a row of it (ws = 1, the transposed
// products of the backward pass).
template <int N, int UNROLL>
__device__ __forceinline__ void dot4(float (&acc)[4], const float* w, int ws, const float* x) {
#pragma unroll UNROLL
    for (int k = 0; k < N; ++k) {
        const float wk = w[k * ws];
        const float4 v = *reinterpret_cast<const float4*>(x + k * R);
        acc[0] = fmaf(v.x, wk, acc[0]);
        acc[1] = fmaf(v.y, wk, acc[1]);
        acc[2] = fmaf(v.z, wk, acc[2]);
        acc[3] = fmaf(v.w, wk, acc[3]);
    }
}

template <bool MIXED>
__global__ void __launch_bounds__(THREADS) rows_kernel(DeviceState s, int offset, int rows) {
    extern __shared__ __align__(16) float smem[];
    float* W2s = smem;                    // [100][101]
    float* W3s = W2s + H1 * W2S;          // [100][10]
    float* h1T = W3s + H2 * OUT;          // [100][8]  (k-major: a thread's 4 rows are one float4)
    float* h2T = h1T + H1 * R;            // [100][8]
    float* dz2T = h2T + H2 * R;           // [100][8]
    float* dz3T = dz2T + H2 * R;          // [10][8]
    const int t = threadIdx.x, b0 = blockIdx.x * R;
    const float inv_rows = 1.0f / (float)rows;

    {  // W2 and W3 into shared memory: all loads first, then all stores, so the
       // ~12 round trips per thread overlap (the first version interleaved them
       // and this kernel took 10 us whatever the batch size)
        constexpr int W2Q = H1 * H2 / 4, W3Q = H2 * OUT / 4;  // float4s: 2500 and 250
        constexpr int PER = (W2Q + THREADS - 1) / THREADS;     // 10
        float4 v2[PER];
#pragma unroll
        for (int q = 0; q < PER; ++q) {
            const int e = t + q * THREADS;
            v2[q] = e < W2Q ? reinterpret_cast<const float4*>(s.w2)[e] : make_float4(0.f, 0.f, 0.f, 0.f);
        }
        const float4 v3 = t < W3Q ? reinterpret_cast<const float4*>(s.w3)[t] : make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
        for (int q = 0; q < PER; ++q) {
            const int e = 4 * (t + q * THREADS);  // H2 % 4 == 0: a float4 never crosses a row of W2
            if (e < H1 * H2) {
                float* dst = W2s + (e / H2) * W2S + e % H2;
                dst[0] = v2[q].x;
                dst[1] = v2[q].y;
                dst[2] = v2[q].z;
                dst[3] = v2[q].w;
            }
        }
        if (t < W3Q) reinterpret_cast<float4*>(W3s)[t] = v3;
    }
    for (int e = t; e < R * H1; e += THREADS) {  // z1 = b1 + the K slices in order
        const int r = e / H1, k = e % H1, b = b0 + r;
        float h = 0.0f;
        if (b < rows) {
            float z = s.b1[k];
#pragma unroll
            for (int sl = 0; sl < KSLICES; ++sl) z += s.part[((size_t)sl * s.batch_pad + b) * PN + k];
            h = relu(z);
            s.h1[(size_t)b * H1 + k] = h;
        }
        h1T[k * R + r] = h;
    }
    __syncthreads();

    const int col = t % 100, half = t / 100;  // threads 0..199: column `col`, rows 4*half..4*half+3
    if (t < 200) {  // H2 = relu(H1 @ W2 + b2)
        float acc[4];
        const float bias = s.b2[col];
#pragma unroll
        for (int r = 0; r < 4; ++r) acc[r] = bias;
        dot4<H1, 4>(acc, W2s + col, W2S, h1T + 4 * half);
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            const int row = 4 * half + r, b = b0 + row;
            const float h = b < rows ? relu(acc[r]) : 0.0f;
            h2T[col * R + row] = h;
            if (b < rows) s.h2[(size_t)b * H2 + col] = h;
        }
    }
    __syncthreads();

    {  // logits, softmax cross-entropy, dZ3: warp w owns row w
        const int w = t / 32, lane = t % 32, b = b0 + w;
        float z[OUT];
#pragma unroll
        for (int c = 0; c < OUT; ++c) z[c] = 0.0f;
        for (int k = lane; k < H2; k += 32) {
            const float h = h2T[k * R + w];
#pragma unroll
            for (int c = 0; c < OUT; ++c) z[c] = fmaf(h, W3s[k * OUT + c], z[c]);
        }
#pragma unroll
        for (int c = 0; c < OUT; ++c) {
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) z[c] += __shfl_xor_sync(0xffffffffu, z[c], o);
            z[c] += s.b3[c];
        }
        float dz = 0.0f;
        if (b < rows) {
            const int sample = s.perm[offset + b];
            const int label = s.labels[sample];
            const float* q = s.targets ? s.targets + (size_t)sample * OUT : nullptr;
            float mx = z[0];
            int arg = 0;
#pragma unroll
            for (int c = 1; c < OUT; ++c)
                if (z[c] > mx) { mx = z[c]; arg = c; }
            float sum = 0.0f;
#pragma unroll
            for (int c = 0; c < OUT; ++c) sum += expf(z[c] - mx);
            float zl = z[0], zc = z[0];
#pragma unroll
            for (int c = 1; c < OUT; ++c) {
                if (c == label) zl = z[c];
                if (c == lane) zc = z[c];
            }
            if (lane < OUT) {
                const float p = expf(zc - mx) / sum;
                dz = (p - (q ? q[lane] : (lane == label ? 1.0f : 0.0f))) * inv_rows;
                s.dz3[(size_t)b * OUT + lane] = dz;
            }
            if (lane == 0) {
                const float lse = mx + logf(sum);
                float ce = lse - zl;
                if (q) {  // soft targets: sum over c of q_c * (logsumexp - z_c)
                    ce = 0.0f;
#pragma unroll
                    for (int c = 0; c < OUT; ++c) ce = fmaf(q[c], lse - z[c], ce);
                }
                s.loss[offset + b] = ce;
                s.correct[offset + b] = arg == label ? 1.0f : 0.0f;
            }
        }
        if (lane < OUT) dz3T[lane * R + w] = dz;
    }
    __syncthreads();

    if (t < 200) {  // dZ2 = (dZ3 @ W3^T) * (H2 > 0)
        float acc[4] = {0.f, 0.f, 0.f, 0.f};
        dot4<OUT, OUT>(acc, W3s + col * OUT, 1, dz3T + 4 * half);
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            const int row = 4 * half + r, b = b0 + row;
            const float d = h2T[col * R + row] > 0.0f ? acc[r] : 0.0f;
            dz2T[col * R + row] = d;
            if (b < rows) s.dz2[(size_t)b * H2 + col] = d;
        }
    }
    __syncthreads();

    if (t < 200) {  // dZ1 = (dZ2 @ W2^T) * (H1 > 0)
        float acc[4] = {0.f, 0.f, 0.f, 0.f};
        dot4<H2, 4>(acc, W2s + col * W2S, 1, dz2T + 4 * half);
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            const int row = 4 * half + r, b = b0 + row;
            if (b >= rows) continue;
            const float d = h1T[col * R + row] > 0.0f ? acc[r] : 0.0f;
            s.dz1[(size_t)b * H1 + col] = d;
            if constexpr (MIXED) s.dz1b[(size_t)b * PN + col] = __float2bfloat16(d);
        }
    }
}

constexpr size_t SMEM_BYTES = SMEM_FLOATS * sizeof(float);

}  // namespace

void setup_rows_kernel() {
    CUDA_CHECK(cudaFuncSetAttribute(rows_kernel<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)SMEM_BYTES));
    CUDA_CHECK(cudaFuncSetAttribute(rows_kernel<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)SMEM_BYTES));
}

void launch_rows(const DeviceState& s, int offset, int rows, bool mixed, cudaStream_t st) {
    if (mixed) rows_kernel<true><<<ceil_div(rows, R), THREADS, SMEM_BYTES, st>>>(s, offset, rows);
    else rows_kernel<false><<<ceil_div(rows, R), THREADS, SMEM_BYTES, st>>>(s, offset, rows);
    CUDA_CHECK_LAUNCH("train.rows");
}

}  // namespace gemmpad::cuda::train
