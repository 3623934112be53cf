// cuda.07_warptile: warp tiling, conflict-free shared memory, double-buffered tiles.
//
// What changed from 06 (same 128x128 block tile, BK = 8, 256 threads, 8x8
// outputs per thread, float4 everywhere with the same scalar fallback):
//  - Warp tiling. The 8 warps split the block tile into 2x4 warp tiles of
//    64x32, and a thread's 8x8 outputs are no longer one contiguous block but
//    2x2 sub-blocks of 4x4 spread over its warp's tile (rows lm*4 and 32+lm*4,
//    columns ln*4 and 16+ln*4, with lane = lm*4 + ln). At each k the 32 lanes
//    then read 8 adjacent float4 of A (128 contiguous bytes) and 4 adjacent
//    float4 of B, each a single shared-memory wavefront (broadcast to the
//    lanes that share it), where 06 needed 4 wavefronts per read of B.
//  - A's transposed tile has rows of BM + 4 floats: the transposed store
//    (two groups of 16 rows, k apart by 4) lands in 32 different banks.
//  - Double buffering: two copies of the shared tiles. While the block
//    multiplies tile t out of one copy, each thread already has tile t+1's
//    global loads in flight into registers; it writes them into the other
//    copy afterwards. One __syncthreads per tile instead of two, and the
//    global-memory latency hides behind 512 FMAs per thread.
// Why it should be faster: per k, 4 conflict-free shared loads feed 64 FMAs
// and the FMA pipes no longer wait for global memory at every tile.
// Shared memory: 2 * (8*132 + 8*128) * 4 B = 16.6 KB per block, static, well
// under the 48 KB every CUDA device grants without opt-in, so two blocks fit
// on an SM of any architecture we build for (register-limited to 2 by
// __launch_bounds__(256, 2): <= 128 registers per thread).
// Measured: see README "Benchmarks" (filled in from native/tools/time_kernels.py).
#include <cstdint>

#include "../common.cuh"

namespace gemmpad::cuda {
namespace {

constexpr int BM = 128, BN = 128, BK = 8;
constexpr int WM = 64, WN = 32;                  // warp tile
constexpr int kWarpsN = BN / WN;                 // 4 warps across, 2 down
constexpr int kThreads = 32 * (BM / WM) * kWarpsN;  // 256
constexpr int kPadA = 4;                         // keeps float4 alignment, shifts banks by 16 every 4 k
constexpr int kSmemBytes = 2 * (BK * (BM + kPadA) + BK * BN) * (int)sizeof(float);
static_assert(BM * BK == 4 * kThreads && BK * BN == 4 * kThreads, "one float4 of A and of B per thread per tile");
static_assert(kSmemBytes <= 48 * 1024, "static shared memory must fit the 48 KB available without opt-in");

template <bool kVec>
__device__ __forceinline__ float4 load_a(const float* __restrict__ A, int M, int K, int r, int k) {
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
    if (r >= M) return v;
    const float* src = A + (size_t)r * K;
    if constexpr (kVec) {
        if (k < K) v = *reinterpret_cast<const float4*>(src + k);  // K % 4 == 0: all 4 in or all out
    } else {
        if (k + 0 < K) v.x = src[k + 0];
        if (k + 1 < K) v.y = src[k + 1];
        if (k + 2 < K) v.z = src[k + 2];
        if (k + 3 < K) v.w = src[k + 3];
    }
    return v;
}

template <bool kVec>
__device__ __forceinline__ float4 load_b(const float* __restrict__ B, int K, int N, int k, int c) {
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
    if (k >= K) return v;
    const float* src = B + (size_t)k * N;
    if constexpr (kVec) {
        if (c < N) v = *reinterpret_cast<const float4*>(src + c);  // N % 4 == 0: all 4 in or all out
    } else {
        if (c + 0 < N) v.x = src[c + 0];
        if (c + 1 < N) v.y = src[c + 1];
        if (c + 2 < N) v.z = src[c + 2];
        if (c + 3 < N) v.w = src[c + 3];
    }
    return v;
}

template <bool kVec>
__global__ void __launch_bounds__(kThreads, 2)
    warptile_kernel(int M, int N, int K, const float* __restrict__ A, const float* __restrict__ B,
                    const float* __restrict__ bias, float* __restrict__ C, Act act) {
    __shared__ __align__(16) float As[2][BK][BM + kPadA];  // transposed: As[buf][k][m]
    __shared__ __align__(16) float Bs[2][BK][BN];
    const int t = threadIdx.x;
    const int warp = t / 32, lane = t % 32;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    // This thread's place: warp tile (wm, wn) inside the block tile, lane (lm, ln) inside the warp tile.
    const int wm = (warp / kWarpsN) * WM, wn = (warp % kWarpsN) * WN;
    const int lm = lane / 4, ln = lane % 4;
    const int am = wm + lm * 4;  // A columns of As read: am..am+3 and am+32..am+35
    const int bn = wn + ln * 4;  // B columns of Bs read: bn..bn+3 and bn+16..bn+19
    // The float4 this thread copies per tile.
    const int a_r = t / (BK / 4), a_c = (t % (BK / 4)) * 4;
    const int b_r = t / (BN / 4), b_c = (t % (BN / 4)) * 4;

    auto store_tile = [&](int buf, float4 av, float4 bv) {
        As[buf][a_c + 0][a_r] = av.x;
        As[buf][a_c + 1][a_r] = av.y;
        As[buf][a_c + 2][a_r] = av.z;
        As[buf][a_c + 3][a_r] = av.w;
        *reinterpret_cast<float4*>(&Bs[buf][b_r][b_c]) = bv;
    };

    float acc[8][8] = {};  // acc[i][j]: row (i < 4 ? am + i : am + 28 + i), col likewise with bn, 16
    const int tiles = (K + BK - 1) / BK;
    store_tile(0, load_a<kVec>(A, M, K, row0 + a_r, a_c), load_b<kVec>(B, K, N, b_r, col0 + b_c));
    __syncthreads();

    for (int tile = 0; tile < tiles; ++tile) {
        const int cur = tile & 1;
        const bool more = tile + 1 < tiles;
        // Issue the next tile's global loads now; they land while we compute.
        // (Past the last tile they are bounds-checked zeros and never stored.)
        const int k_next = (tile + 1) * BK;
        const float4 av_next = load_a<kVec>(A, M, K, row0 + a_r, k_next + a_c);
        const float4 bv_next = load_b<kVec>(B, K, N, k_next + b_r, col0 + b_c);
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a_reg[8], b_reg[8];
            *reinterpret_cast<float4*>(&a_reg[0]) = *reinterpret_cast<const float4*>(&As[cur][k][am]);
            *reinterpret_cast<float4*>(&a_reg[4]) = *reinterpret_cast<const float4*>(&As[cur][k][am + 32]);
            *reinterpret_cast<float4*>(&b_reg[0]) = *reinterpret_cast<const float4*>(&Bs[cur][k][bn]);
            *reinterpret_cast<float4*>(&b_reg[4]) = *reinterpret_cast<const float4*>(&Bs[cur][k][bn + 16]);
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] += a_reg[i] * b_reg[j];
        }
        // The other copy was last read in the previous iteration, which every
        // thread finished before the barrier that ended it: safe to overwrite.
        if (more) store_tile(cur ^ 1, av_next, bv_next);
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int row = row0 + am + (i < 4 ? i : 28 + i);
        if (row >= M) continue;
        float* c_row = C + (size_t)row * N;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int col = col0 + bn + 16 * h;
            const float* v = &acc[i][4 * h];
            if constexpr (kVec) {
                if (col < N)  // N % 4 == 0: the 4 columns are all inside or all outside
                    *reinterpret_cast<float4*>(c_row + col) =
                        make_float4(epilogue(v[0], bias, col + 0, act), epilogue(v[1], bias, col + 1, act),
                                    epilogue(v[2], bias, col + 2, act), epilogue(v[3], bias, col + 3, act));
            } else {
#pragma unroll
                for (int q = 0; q < 4; ++q)
                    if (col + q < N) c_row[col + q] = epilogue(v[q], bias, col + q, act);
            }
        }
    }
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

void launch(const GemmProblem& p, cudaStream_t stream) {
    dim3 grid(ceil_div(p.N, BN), ceil_div(p.M, BM));
    const auto* A = static_cast<const float*>(p.A);
    const auto* B = static_cast<const float*>(p.B);
    const bool vec = p.K % 4 == 0 && p.N % 4 == 0 && aligned16(A) && aligned16(B) && aligned16(p.C);
    if (vec)
        warptile_kernel<true><<<grid, kThreads, 0, stream>>>(p.M, p.N, p.K, A, B, p.bias, p.C, p.act);
    else
        warptile_kernel<false><<<grid, kThreads, 0, stream>>>(p.M, p.N, p.K, A, B, p.bias, p.C, p.act);
    CUDA_CHECK_LAUNCH("cuda.07_warptile");
}

}  // namespace
}  // namespace gemmpad::cuda

GEMMPAD_REGISTER_CUDA("cuda.07_warptile", "fp32", gemmpad::InType::F32,
                      "warp-tiled 128x128x8, conflict-free float4 shared reads, double-buffered tiles",
                      gemmpad::cuda::launch);
