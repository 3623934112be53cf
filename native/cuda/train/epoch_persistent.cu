// train epoch_persistent: a whole fp32 epoch in one cooperative launch, two grid barriers a step.
// Change from the graph of three launches a step: blocks stay resident and meet at grid barriers. Each of
// W1's 100 tiles of 32x32 lives in one block's shared memory with its velocity; while the other 32 blocks run
// rows.cuh (4 rows a block up to 128 rows, else 8), that block stages the next step's 32 columns of X, takes
// its gradient, updates the tile and goes on with it to the next step's layer-1 sums: no forward phase.
// Limit: fp32, batches up to 256 rows, 120+ SMs (a block a tile) and 166 KB of smem; two barriers a step.
// Run: gemmpad bench train --batches 64 256 --parity-epochs 0
// Profile: ncu -k regex:epoch_persistent -c 1 gemmpad bench train --batches 256 --epochs 1 --torch-epochs 1 --parity-epochs 0
// Figure (H200 2026-12-01, assets/benchmarks/h200/train.json): native_persistent fp32: an epoch of 60,000 images 9.0 ms at batch 64, 3.6 at batch 256 (epoch_ms_median)
#include <cooperative_groups.h>

#include "grad_tile.cuh"
#include "rows.cuh"

namespace gemmpad::cuda::train {
namespace {

namespace cg = cooperative_groups;

static_assert(W1_KTILES == (IN + TILE - 1) / TILE, "the partial sums are one slice per 32-row tile of W1");
constexpr int JOBS = grad_jobs(0);  // W1's 100 tiles (grad_job numbers them first), W2's 16, W3's 4: a block each
constexpr int W1_TILES = tiles_of(IN + 1, H1);
constexpr int NARROW = 4;  // rows a block of the row work where the 32 blocks without a W1 tile suffice
constexpr int PMAX = PERSISTENT_MAX_BATCH;
constexpr int XS = TILE + 4;  // row stride of a row-major tile of X (the gradient's operand): float4-aligned
constexpr int TS = PMAX + 4;  // row stride of X's tile transposed (the forward's operand)
// Shared memory, in floats: the rows region (rows.cuh in the first phase of a step, the gradient's
// reduction in the second), the next step's X tile transposed, two row-major X tiles (this step's, the
// next step's), a W1 block's weights and velocities.
constexpr int ROWS_FLOATS = (int)(ROWS_SMEM_BYTES / sizeof(float) + 3) / 4 * 4;
constexpr int XT_FLOATS = TILE * TS;
constexpr int XR_FLOATS = PMAX * XS;
constexpr size_t SMEM_BYTES = (ROWS_FLOATS + XT_FLOATS + 2 * XR_FLOATS + 2 * TILE * TILE) * sizeof(float);
static_assert(PMAX * TILE + 4 * TILE * TILE <= ROWS_FLOATS && sizeof(GradSmem) <= ROWS_SMEM_BYTES,
              "the second phase's operands fit in the rows region");
static_assert(PMAX * 8 == 8 * TILE_THREADS, "one float4 of X per thread and q: 8 of them");

// The next step's X tile: XR[r][0..32) and XT[k][r] = X[perm[offset + r]][k0 + k] for r < rows, zero past
// IN except XR's column IN, which is 1 (the bias input of W1's last tile; the forward reads XT).
__device__ void stage_x(const DeviceState& s, int k0, int offset, int rows, float* XR, float* XT) {
    constexpr int Q = PMAX * 8 / TILE_THREADS;  // float4s per thread, all in flight at once
    float4 v[Q];
#pragma unroll
    for (int q = 0; q < Q; ++q) {
        const int e = threadIdx.x + q * TILE_THREADS, r = e >> 3, k = k0 + 4 * (e & 7);  // IN % 4 == 0
        v[q] = make_float4(0.f, 0.f, 0.f, 0.f);
        if (r < rows && k < IN) v[q] = *reinterpret_cast<const float4*>(s.x + (size_t)s.perm[offset + r] * IN + k);
    }
#pragma unroll
    for (int q = 0; q < Q; ++q) {
        const int e = threadIdx.x + q * TILE_THREADS, r = e >> 3, c = 4 * (e & 7);
        if (r >= rows) continue;
        XT[(c + 0) * TS + r] = v[q].x;
        XT[(c + 1) * TS + r] = v[q].y;
        XT[(c + 2) * TS + r] = v[q].z;
        XT[(c + 3) * TS + r] = v[q].w;
        if (k0 + c == IN) v[q].x = 1.0f;
        *reinterpret_cast<float4*>(XR + r * XS + c) = v[q];
    }
}

// part[kt][r][j0 + n] = sum over k < 32 of XT[k][r] * W[k][n] for r < rows, j0 + n < H1 (W: 32x32, zero
// in rows past W1's). Thread: rows 4 tm .. 4 tm + 3 (+128), columns 4 tn .. 4 tn + 3.
__device__ void l1_forward(const DeviceState& s, int kt, int j0, int rows, const float* XT, const float* W) {
    const int tm = threadIdx.x >> 3, tn = threadIdx.x & 7, j = j0 + 4 * tn;
    for (int r0 = 0; r0 < rows; r0 += 128) {
        float acc[4][4] = {};
#pragma unroll 8
        for (int k = 0; k < TILE; ++k) {
            const float4 a = *reinterpret_cast<const float4*>(XT + k * TS + r0 + 4 * tm);
            const float4 w = *reinterpret_cast<const float4*>(W + k * TILE + 4 * tn);
            const float av[4] = {a.x, a.y, a.z, a.w}, wv[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int c = 0; c < 4; ++c) acc[i][c] = fmaf(av[i], wv[c], acc[i][c]);
        }
        if (j < H1)  // H1 % 4 == 0: four columns are all in or all out
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int b = r0 + 4 * tm + i;
                if (b < rows)
                    *reinterpret_cast<float4*>(s.part + ((size_t)kt * s.batch_pad + b) * PN + j) =
                        make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
            }
    }
}

// The gradient of W1's tile (i0, j0) over the step's rows (XR: their X tile, staged a step ago), the SGD
// step on the tile held in W / V (and on b1 in global memory for the last tile's bias row).
__device__ void w1_tile_step(const DeviceState& s, int i0, int j0, int rows, const float* XR, float* W, float* V,
                             const Hyper& h, float* region) {
    float* Ds = region;                 // [rows][32]: dZ1's columns j0 ..
    float* red = region + PMAX * TILE;  // tile_reduce's 4 partial tiles
    constexpr int Q = PMAX * 8 / TILE_THREADS;
    float4 v[Q];
#pragma unroll
    for (int q = 0; q < Q; ++q) {
        const int e = threadIdx.x + q * TILE_THREADS, r = e >> 3, j = j0 + 4 * (e & 7);  // H1 % 4 == 0
        v[q] = r < rows && j < H1 ? *reinterpret_cast<const float4*>(s.dz1 + (size_t)r * H1 + j)
                                  : make_float4(0.f, 0.f, 0.f, 0.f);
    }
#pragma unroll
    for (int q = 0; q < Q; ++q) {
        const int e = threadIdx.x + q * TILE_THREADS, r = e >> 3;
        if (r < rows) *reinterpret_cast<float4*>(Ds + r * TILE + 4 * (e & 7)) = v[q];
    }
    __syncthreads();
    TileAcc acc;
    tile_zero(acc);
    tile_accumulate<XS>(XR, Ds, rows, acc);
    tile_reduce(acc, red, [&](int m, int n, float g) {
        const int i = i0 + m, j = j0 + n;
        if (j >= H1) return;
        if (i < IN) sgd_step(W[m * TILE + n], V[m * TILE + n], g, h, h.weight_decay);
        else if (i == IN) sgd_update(s.b1 + j, s.v_b1 + j, g, h, h.bias_weight_decay);
    });
    __syncthreads();
}

__global__ void __launch_bounds__(TILE_THREADS, 1) epoch_persistent(DeviceState s) {
    extern __shared__ __align__(16) float smem[];
    float* const region = smem;
    float* const XT = smem + ROWS_FLOATS;
    float* const xr[2] = {XT + XT_FLOATS, XT + XT_FLOATS + XR_FLOATS};
    float* const W = xr[1] + XR_FLOATS;  // a W1 block's tile, [32][32], zero past W1
    float* const V = W + TILE * TILE;    // its velocity
    cg::grid_group grid = cg::this_grid();
    const Hyper h = *s.hyper;
    const int n = s.n, B = s.batch;
    int layer = 3, i0 = 0, j0 = 0;  // this block's tile (the launch gives a block to every job)
    if (blockIdx.x < JOBS) grad_job(blockIdx.x, 0, layer, i0, j0);
    const bool owns_w1 = layer == 0;

    if (owns_w1) {  // the tile, and the first step's layer-1 partial sums
        for (int e = threadIdx.x; e < TILE * TILE; e += TILE_THREADS) {
            const int k = i0 + e / TILE, j = j0 + e % TILE;
            const bool in = k < IN && j < H1;
            W[e] = in ? s.w1[(size_t)k * H1 + j] : 0.0f;
            V[e] = in ? s.v_w1[(size_t)k * H1 + j] : 0.0f;
        }
        stage_x(s, i0, 0, B, xr[0], XT);
        __syncthreads();
        l1_forward(s, i0 / TILE, j0, B, XT, W);
    }
    grid.sync();

    int step = 0;
    for (int offset = 0; offset < n; offset += B, ++step) {
        const int rows = min(B, n - offset), next = offset + B, next_rows = next < n ? min(B, n - next) : 0;
        // Rows on the last blocks, so that W1's blocks are free to stage the next step's X meanwhile: NARROW a
        // block where the blocks without a W1 tile have room for that (up to 128 rows on 132 SMs), else 8.
        const bool narrow = rows <= NARROW * ((int)gridDim.x - W1_TILES);
        const int per_block = narrow ? NARROW : ROWS_PER_BLOCK;
        for (int vb = gridDim.x - 1 - blockIdx.x; vb * per_block < rows; vb += gridDim.x) {
            __syncthreads();
            if (narrow) rows_block<false, W1_KTILES, NARROW>(s, offset, rows, vb, region);
            else rows_block<false, W1_KTILES, ROWS_PER_BLOCK>(s, offset, rows, vb, region);
        }
        if (owns_w1 && next_rows > 0) {
            __syncthreads();  // the step before's forward has read XT
            stage_x(s, i0, next, next_rows, xr[(step + 1) & 1], XT);
        }
        grid.sync();

        if (owns_w1) {
            w1_tile_step(s, i0, j0, rows, xr[step & 1], W, V, h, region);
            if (next_rows > 0) l1_forward(s, i0 / TILE, j0, next_rows, XT, W);
        } else if (layer < 3) {  // W2's and W3's tiles: staged and updated in global memory as the graph's kernel does
            grad_tile_update(s, layer, i0, j0, offset, rows, h, *reinterpret_cast<GradSmem*>(region));
        }
        grid.sync();
    }

    if (owns_w1)  // the tile back where the other engines and read_params find it
        for (int e = threadIdx.x; e < TILE * TILE; e += TILE_THREADS) {
            const int k = i0 + e / TILE, j = j0 + e % TILE;
            if (k < IN && j < H1) {
                s.w1[(size_t)k * H1 + j] = W[e];
                s.v_w1[(size_t)k * H1 + j] = V[e];
            }
        }
}

}  // namespace

int epoch_persistent_grid() {
    int dev = 0, coop = 0, sms = 0, smem = 0, per_sm = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    if (!coop || sms < JOBS || (size_t)smem < SMEM_BYTES) return 0;
    CUDA_CHECK(cudaFuncSetAttribute(epoch_persistent, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)SMEM_BYTES));
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, epoch_persistent, TILE_THREADS, SMEM_BYTES));
    return per_sm > 0 ? sms : 0;  // one block an SM
}

void launch_epoch_persistent(const DeviceState& s, int grid, cudaStream_t st) {
    void* args[] = {const_cast<DeviceState*>(&s)};
    CUDA_CHECK(cudaLaunchCooperativeKernel((const void*)epoch_persistent, dim3(grid), dim3(TILE_THREADS), args,
                                           SMEM_BYTES, st));
    CUDA_CHECK_LAUNCH("train.epoch_persistent");
}

}  // namespace gemmpad::cuda::train
