// The fp32 weight-gradient tile shared by grad_update_fp32 (all layers) and grad_update_bf16
// (layers 2-3 and the layer-1 bias in mixed mode).
//
// For one layer with input activations A [rows, in] and output deltas
// D [rows, out], the gradient of W [in, out] is A^T D and that of the bias is
// the column sum of D. Treating the bias as row `in` of an augmented weight
// matrix whose input column is all ones makes both one product, so one tile
// routine updates weights and biases. The optimiser step runs in the tile's
// epilogue: the gradient is never written to memory.
#pragma once

#include "tile.cuh"

namespace gemmpad::cuda::train {

struct LayerRef {
    const float* a;  // [rows, in] activations (nullptr: layer 1, gathered from the dataset)
    const float* d;  // [rows, out] deltas
    float *w, *b, *vw, *vb;
    int in, out;
};

__device__ __forceinline__ LayerRef layer_ref(const DeviceState& s, int layer) {
    if (layer == 0) return {nullptr, s.dz1, s.w1, s.b1, s.v_w1, s.v_b1, IN, H1};
    if (layer == 1) return {s.h1, s.dz2, s.w2, s.b2, s.v_w2, s.v_b2, H1, H2};
    return {s.h2, s.dz3, s.w3, s.b3, s.v_w3, s.v_b3, H2, OUT};
}

// Tiles of the augmented [in + 1, out] gradient, layer by layer. Layer 1 starts
// at row `l1_first_row` (0, or IN when tensor cores do its weights).
__host__ __device__ constexpr int tiles_of(int in_rows, int out) { return ((in_rows + TILE - 1) / TILE) * ((out + TILE - 1) / TILE); }

__host__ __device__ constexpr int grad_jobs(int l1_first_row) {
    return tiles_of(IN + 1 - l1_first_row, H1) + tiles_of(H1 + 1, H2) + tiles_of(H2 + 1, OUT);
}

__device__ inline void grad_job(int job, int l1_first_row, int& layer, int& i0, int& j0) {
    const int rows_l[3] = {IN + 1 - l1_first_row, H1 + 1, H2 + 1};
    const int first_l[3] = {l1_first_row, 0, 0};
    const int outs[3] = {H1, H2, OUT};
    for (layer = 0; layer < 3; ++layer) {
        const int jt = (outs[layer] + TILE - 1) / TILE;
        const int n = tiles_of(rows_l[layer], outs[layer]);
        if (job < n) {
            i0 = first_l[layer] + (job / jt) * TILE;
            j0 = (job % jt) * TILE;
            return;
        }
        job -= n;
    }
}

// Batch rows staged per round trip. The first version staged 32 and waited on
// 8 dependent trips at batch 256 (16 us per launch); 128 needs 2.
inline constexpr int GRAD_CHUNK = 128;

union GradSmem {
    struct {
        float L[GRAD_CHUNK * TILE];
        float R[GRAD_CHUNK * TILE];
    } op;
    float red[4 * TILE * TILE];  // used only after the last chunk
};

// Gradient of rows i0..i0+31 (row `in` = bias), cols j0..j0+31 of one layer
// over batch rows perm[offset, offset + rows), then the SGD update.
__device__ inline void grad_tile_update(const DeviceState& s, int layer, int i0, int j0, int offset, int rows,
                                        const Hyper& h, GradSmem& sm) {
    const LayerRef L = layer_ref(s, layer);
    const int t = threadIdx.x;
    constexpr int LQ = GRAD_CHUNK * TILE / 4 / TILE_THREADS;  // float4s of A per thread: 4
    constexpr int RQ = GRAD_CHUNK * TILE / TILE_THREADS;      // floats of D per thread: 16
    TileAcc acc;
    tile_zero(acc);
    for (int c0 = 0; c0 < rows; c0 += GRAD_CHUNK) {
        const int rc = min(GRAD_CHUNK, rows - c0);
        float4 av[LQ];
        float dv[RQ];
#pragma unroll
        for (int q = 0; q < LQ; ++q) {  // L[r][m] = A[c0 + r][i0 + m] (in % 4 == 0: a float4 is all in or all out)
            const int e = t + q * TILE_THREADS, r = e >> 3, i = i0 + 4 * (e & 7), b = c0 + r;
            av[q] = make_float4(0.f, 0.f, 0.f, 0.f);
            if (r < rc) {
                if (i < L.in) {
                    const float* arow = L.a ? L.a + (size_t)b * L.in : s.x + (size_t)s.perm[offset + b] * IN;
                    av[q] = *reinterpret_cast<const float4*>(arow + i);
                } else if (i == L.in) {
                    av[q].x = 1.0f;  // the bias input
                }
            }
        }
#pragma unroll
        for (int q = 0; q < RQ; ++q) {  // R[r][n] = D[c0 + r][j0 + n]
            const int e = t + q * TILE_THREADS, r = e / TILE, j = j0 + e % TILE;
            dv[q] = (r < rc && j < L.out) ? L.d[(size_t)(c0 + r) * L.out + j] : 0.0f;
        }
#pragma unroll
        for (int q = 0; q < LQ; ++q) {
            const int e = t + q * TILE_THREADS;
            if ((e >> 3) < rc) *reinterpret_cast<float4*>(sm.op.L + (e >> 3) * TILE + 4 * (e & 7)) = av[q];
        }
#pragma unroll
        for (int q = 0; q < RQ; ++q) {
            const int e = t + q * TILE_THREADS;
            if (e / TILE < rc) sm.op.R[e] = dv[q];
        }
        __syncthreads();
        tile_accumulate(sm.op.L, sm.op.R, rc, acc);
        __syncthreads();
    }
    tile_reduce(acc, sm.red, [&](int m, int n, float g) {
        const int i = i0 + m, j = j0 + n;
        if (j >= L.out || i > L.in) return;
        if (i < L.in) sgd_update(L.w + (size_t)i * L.out + j, L.vw + (size_t)i * L.out + j, g, h, h.weight_decay);
        else sgd_update(L.b + j, L.vb + j, g, h, h.bias_weight_decay);
    });
}

}  // namespace gemmpad::cuda::train
