// The row-local work of one training step (see rows.cu, whose kernel runs it one block per 4 rows, and
// epoch_persistent.cu, whose epoch kernel runs it between grid barriers): sum of layer 1's partial sums,
// bias, ReLU, layers 2-3, softmax cross-entropy and the backward deltas dZ3 -> dZ1.
#pragma once

#include "train.cuh"
#include "../ptx/cp_async.cuh"

namespace gemmpad::cuda::train {

namespace rows_detail {
constexpr int W2S = H1 + 1;  // padded row stride of W2 in shared memory

// acc[r] += sum over k < N of x[k * R + r] * w[k * ws], r = 0..3: a thread's four rows of one
// product column. x is k-major with R floats a step, so the four rows are one float4; w walks
// a column of a weight matrix (ws = its row stride) or a row of it (ws = 1, the transposed
// products of the backward pass).
template <int N, int UNROLL, int R>
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

}  // namespace rows_detail

inline constexpr int ROWS_THREADS = 256;
inline constexpr size_t ROWS_SMEM_BYTES =
    ((size_t)H1 * (H1 + 1) + H2 * OUT + 3 * 100 * ROWS_PER_BLOCK + OUT * ROWS_PER_BLOCK + OUT) * sizeof(float);

// The rows of block `block` (R batch rows from block * R: 8, or 4 where more blocks share a batch) of the
// step on perm[offset, offset + rows), the layer-1 sums read as SLICES partial sums (forward_l1's K slices,
// or the persistent epoch's k tiles). smem: ROWS_SMEM_BYTES. Callers running it twice in a block put a
// __syncthreads() between.
template <bool MIXED, int SLICES, int R>
__device__ __forceinline__ void rows_block(const DeviceState& s, int offset, int rows, int block, float* smem) {
    using namespace rows_detail;
    static_assert(R % 4 == 0 && R <= ROWS_PER_BLOCK, "a thread's rows are one float4; the smem is sized for 8");
    constexpr int THREADS = ROWS_THREADS, WORKERS = 25 * R;  // threads with a column (of 100) and 4 rows
    float* W2s = smem;                    // [100][101]
    float* W3s = W2s + H1 * W2S;          // [100][10]
    float* h1T = W3s + H2 * OUT;          // [100][R]  (k-major: a thread's 4 rows are one float4)
    float* h2T = h1T + H1 * R;            // [100][R]
    float* dz2T = h2T + H2 * R;           // [100][R]
    float* dz3T = dz2T + H2 * R;          // [10][R]
    float* b3s = dz3T + OUT * R;          // [10]
    const int t = threadIdx.x, b0 = block * R;
    const float inv_rows = 1.0f / (float)rows;
    const int col = t % 100, half = t / 100;  // threads below WORKERS: column `col`, rows 4*half..4*half+3
    const int w = t / 32, lane = t % 32;      // the softmax: warp w < R owns row w
    const bool row_warp = R == THREADS / 32 || w < R;  // (every warp at R = 8: no test)

    // Every load that does not wait for another goes out first: the row's sample, W2 and W3 (copied to
    // shared memory by cp.async: no registers held), the biases and the partial sums, then the label (it
    // waits for the sample, and a warp issues in order), so the round trips overlap (the first version
    // waited for each in turn and this kernel took 10 us whatever the batch size).
    const int row_sample = row_warp && b0 + w < rows ? s.perm[offset + b0 + w] : 0;
    for (int e = t; e < H1 * H2; e += THREADS)  // W2 row by row into rows of W2S (not 16-byte aligned: 4 bytes a copy)
        cp_async_zfill<4>(smem_u32(W2s + (e / H2) * W2S + e % H2), s.w2 + e, 4);
    if (t < H2 * OUT / 4) cp_async16(W3s + 4 * t, s.w3 + 4 * t);
    cp_async_commit();
    // H1's sums: threads below WORKERS take four columns (4 q ..) of one row (zr) each, a float4 a slice: a
    // quarter of the load instructions of one column of four rows (which cost 2.8 of the persistent
    // epoch's 4.3 us here)
    const int q = t % 25, zr = t / 25;
    float4 z1[SLICES], b1 = make_float4(0.f, 0.f, 0.f, 0.f);
    float b2 = 0.0f;
    const float b3 = t < OUT ? s.b3[t] : 0.0f;
    if (t < WORKERS) {
        b1 = *reinterpret_cast<const float4*>(s.b1 + 4 * q);
        b2 = s.b2[col];
        const int b = b0 + zr;
#pragma unroll
        for (int sl = 0; sl < SLICES; ++sl)
            z1[sl] = b < rows ? *reinterpret_cast<const float4*>(s.part + ((size_t)sl * s.batch_pad + b) * PN + 4 * q)
                              : make_float4(0.f, 0.f, 0.f, 0.f);
    }
    const int row_label = row_warp && b0 + w < rows ? s.labels[row_sample] : 0;
    if (t < OUT) b3s[t] = b3;
    if (t < WORKERS) {  // H1 = relu(b1 + the partial sums in order)
        const int b = b0 + zr;
        float4 h = make_float4(0.f, 0.f, 0.f, 0.f);
        if (b < rows) {
            float4 z = b1;
#pragma unroll
            for (int sl = 0; sl < SLICES; ++sl) {
                z.x += z1[sl].x;
                z.y += z1[sl].y;
                z.z += z1[sl].z;
                z.w += z1[sl].w;
            }
            h = make_float4(relu(z.x), relu(z.y), relu(z.z), relu(z.w));
            *reinterpret_cast<float4*>(s.h1 + (size_t)b * H1 + 4 * q) = h;  // H1 % 4 == 0
        }
        h1T[(4 * q + 0) * R + zr] = h.x;
        h1T[(4 * q + 1) * R + zr] = h.y;
        h1T[(4 * q + 2) * R + zr] = h.z;
        h1T[(4 * q + 3) * R + zr] = h.w;
    }
    cp_async_wait<0>();
    __syncthreads();

    if (t < WORKERS) {  // H2 = relu(H1 @ W2 + b2)
        float acc[4];
        const float bias = b2;
#pragma unroll
        for (int r = 0; r < 4; ++r) acc[r] = bias;
        dot4<H1, 10, R>(acc, W2s + col, W2S, h1T + 4 * half);
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            const int row = 4 * half + r, b = b0 + row;
            const float h = b < rows ? relu(acc[r]) : 0.0f;
            h2T[col * R + row] = h;
            if (b < rows) s.h2[(size_t)b * H2 + col] = h;
        }
    }
    __syncthreads();

    if (row_warp) {  // logits, softmax cross-entropy, dZ3: warp w owns row w
        const int b = b0 + w;
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
            z[c] += b3s[c];
        }
        float dz = 0.0f;
        if (b < rows) {
            const int label = row_label;
            const float* q = s.targets ? s.targets + (size_t)row_sample * OUT : nullptr;
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

    if (t < WORKERS) {  // dZ2 = (dZ3 @ W3^T) * (H2 > 0)
        float acc[4] = {0.f, 0.f, 0.f, 0.f};
        dot4<OUT, OUT, R>(acc, W3s + col * OUT, 1, dz3T + 4 * half);
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            const int row = 4 * half + r, b = b0 + row;
            const float d = h2T[col * R + row] > 0.0f ? acc[r] : 0.0f;
            dz2T[col * R + row] = d;
            if (b < rows) s.dz2[(size_t)b * H2 + col] = d;
        }
    }
    __syncthreads();

    if (t < WORKERS) {  // dZ1 = (dZ2 @ W2^T) * (H1 > 0)
        float acc[4] = {0.f, 0.f, 0.f, 0.f};
        dot4<H2, 10, R>(acc, W2s + col * W2S, 1, dz2T + 4 * half);
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

}  // namespace gemmpad::cuda::train
