// cpu.02_blocked_simd: cache blocking, packed panels, a SIMD register-blocked
// micro-kernel, and threads for the big problems (the BLIS/GotoBLAS recipe).
//
// What changed from 01_naive: the naive loop does one multiply-add per load and
// walks B down a column, so it is bound by memory, not arithmetic. Here:
//  1. Register blocking. The micro-kernel keeps an MR x NR tile of C in
//     registers (12 x 32 floats = 24 zmm with AVX-512, 6 x 16 = 12 ymm with
//     AVX2) and, per step of k, loads one row of B (NR floats, 2 vectors) and
//     broadcasts MR values of A: 2*MR FMAs for MR+2 loads instead of 1 for 2.
//  2. Packing. Before the micro-kernels run, a KC x NC block of B is copied
//     into NR-wide panels and an MC x KC block of A into MR-tall panels, both
//     in the exact order the micro-kernel reads them: unit stride, no TLB
//     misses, no cache-set conflicts from power-of-two leading dimensions.
//     Partial panels are zero-padded so the micro-kernel never branches.
//  3. Cache blocking. KC = 256 makes one B panel (256 x 32 floats = 32 KB)
//     stay in L1 while every A panel streams past it; the A block (MC x KC,
//     240 KB) stays in L2; the B block (KC x NC) in L3.
//  4. Threads (OpenMP, when linked): the (NR panel, MR panel) tiles of one
//     block are shared out, but only when M*N*K >= 2^21: below that the fork
//     and barriers (a few microseconds) cost more than they save.
//  5. Small M (the MLP at batch 1..24): packing B would cost as much as the
//     product itself, so B is read in place (row stride N), see small_m().
// The micro-kernel is instantiated for every tile height R <= MR and for 1 or
// 2 vectors of width, so edge tiles cost what they hold, not a full tile.
// The epilogue (C += previous K blocks, + bias, ReLU with NaN kept) is fused
// into the store of the last K block, as in 01_naive.
// ISA dispatch: see ../simd.h (AVX-512, AVX2+FMA, generic 4-wide; picked at run time).
//
// Measured (this dev VM: 2 cores of a Xeon "Sapphire Rapids" KVM guest, shared
// with other jobs; medians of 7 runs of 30-200 reps each after warm-up, min-max in brackets;
// NumPy = OpenBLAS 0.3.31 with its own threads, same process):
//   see the MEASURED block at the end of this comment.
// MEASURED:
//   measured: see README benchmarks
#include <algorithm>
#include <cstddef>
#include <utility>

#include "../cpu.h"
#include "../simd.h"

namespace gemmpad::cpu {
namespace {

constexpr int kMaxMR = 12;          // largest micro-tile height of any ISA below
constexpr int KC = 256;             // depth of one packed block
constexpr int MC_PANELS = 20;       // A block height, in MR panels
constexpr int NC = 4096;            // B block width (a multiple of every NR)
constexpr double kThreadWork = 1 << 21;  // M*N*K from which threads pay off

// One micro-kernel call: C[m, n] (op)= A_panel[., kc] @ B_panel[kc, n].
struct Tile {
    int kc;
    const float* a;     // packed A panel: kc steps of `as` floats (rows past m zero-padded)
    int as;             // floats per k step of the A panel (MR, or fewer for a short panel)
    const float* b;     // B panel: kc rows of NV*W floats, ldb apart
    ptrdiff_t ldb;
    float* c;
    ptrdiff_t ldc;
    int m, n;           // valid rows (<= R) and columns (<= NV*W) of this tile
    bool accumulate;    // C += result (K blocks after the first) instead of C = result
    const float* bias;  // last K block only: bias of this tile's first column, or nullptr
    bool relu;          // last K block only
};

// The micro-kernel: an R x (NV*W) tile of C in R*NV vector registers.
template <int W, int R, int NV>
GEMMPAD_INLINE void tile_body(const Tile& t) {
    using V = Vec<W>;
    // A short tile (the MLP at batch 1) has too few accumulators to hide the
    // FMA latency (4 cycles, 2 per cycle in flight): give it U independent
    // sets over alternating k, summed at the end.
    constexpr int U = R * NV >= 8 ? 1 : (R * NV >= 4 ? 2 : 4);
    V acc[U][R][NV];
    for (int u = 0; u < U; ++u)
        for (int r = 0; r < R; ++r)
            for (int v = 0; v < NV; ++v) acc[u][r][v] = V{};

    const float* a = t.a;
    const float* b = t.b;
    int k = 0;
    for (; k + U <= t.kc; k += U) {
        for (int u = 0; u < U; ++u, a += t.as, b += t.ldb) {
            V bv[NV];
            for (int v = 0; v < NV; ++v) bv[v] = loadv<W>(b + v * W);
            for (int r = 0; r < R; ++r) {
                const float ar = a[r];  // broadcast; folds into the FMA's memory operand
                for (int v = 0; v < NV; ++v) acc[u][r][v] += bv[v] * ar;
            }
        }
    }
    for (; k < t.kc; ++k, a += t.as, b += t.ldb)
        for (int r = 0; r < R; ++r)
            for (int v = 0; v < NV; ++v) acc[0][r][v] += loadv<W>(b + v * W) * a[r];
    for (int u = 1; u < U; ++u)
        for (int r = 0; r < R; ++r)
            for (int v = 0; v < NV; ++v) acc[0][r][v] += acc[u][r][v];

    if (t.m == R && t.n == NV * W) {  // full tile: vector epilogue straight into C
        for (int r = 0; r < R; ++r) {
            for (int v = 0; v < NV; ++v) {
                float* cp = t.c + r * t.ldc + v * W;
                V x = acc[0][r][v];
                if (t.accumulate) x += loadv<W>(cp);
                if (t.bias) x += loadv<W>(t.bias + v * W);
                if (t.relu) x = relu<W>(x);
                storev<W>(cp, x);
            }
        }
        return;
    }
    // Edge tile: spill each row and write only the valid part, same epilogue.
    for (int r = 0; r < R; ++r) {
        if (r >= t.m) break;
        alignas(64) float row[NV * W];
        for (int v = 0; v < NV; ++v) storev<W>(row + v * W, acc[0][r][v]);
        float* cp = t.c + r * t.ldc;
        for (int j = 0; j < t.n; ++j) {
            float x = row[j];
            if (t.accumulate) x += cp[j];
            if (t.bias) x += t.bias[j];
            if (t.relu && x < 0.0f) x = 0.0f;
            cp[j] = x;
        }
    }
}

using TileFn = void (*)(const Tile&);

struct MicroKernels {
    int w;    // floats per vector
    int mr;   // micro-tile height
    TileFn fn[kMaxMR][2];  // fn[R-1][NV-1]
};

// One entry point per ISA; everything below them is inlined and compiled for that ISA.
template <int W, int MR, class Get, size_t... I>
MicroKernels make_kernels(Get get, std::index_sequence<I...>) {
    MicroKernels k{W, MR, {}};
    ((k.fn[I][0] = get(std::integral_constant<int, I + 1>{}, std::integral_constant<int, 1>{}),
      k.fn[I][1] = get(std::integral_constant<int, I + 1>{}, std::integral_constant<int, 2>{})),
     ...);
    return k;
}

#if defined(GEMMPAD_X86)
template <int R, int NV>
GEMMPAD_TARGET_AVX512 void tile_avx512(const Tile& t) { tile_body<16, R, NV>(t); }
template <int R, int NV>
GEMMPAD_TARGET_AVX2 void tile_avx2(const Tile& t) { tile_body<8, R, NV>(t); }
#endif
template <int R, int NV>
void tile_generic(const Tile& t) { tile_body<4, R, NV>(t); }

const MicroKernels& micro_kernels() {
    static const MicroKernels k = [] {
#if defined(GEMMPAD_X86)
        if (isa() == Isa::Avx512)
            return make_kernels<16, 12>([](auto r, auto nv) -> TileFn { return &tile_avx512<decltype(r)::value, decltype(nv)::value>; },
                                        std::make_index_sequence<12>{});
        if (isa() == Isa::Avx2)
            return make_kernels<8, 6>([](auto r, auto nv) -> TileFn { return &tile_avx2<decltype(r)::value, decltype(nv)::value>; },
                                      std::make_index_sequence<6>{});
#endif
        return make_kernels<4, 4>([](auto r, auto nv) -> TileFn { return &tile_generic<decltype(r)::value, decltype(nv)::value>; },
                                  std::make_index_sequence<4>{});
    }();
    return k;
}

// A[i0 .. i0+rows, p0 .. p0+kc] -> panel of `stride` floats per k (k-major),
// entries for rows past `rows` zero.
void pack_a(const float* A, int lda, int rows, int kc, int stride, float* dst) {
    for (int r = 0; r < rows; ++r)
        for (int k = 0; k < kc; ++k) dst[(size_t)k * stride + r] = A[(size_t)r * lda + k];
    for (int r = rows; r < stride; ++r)
        for (int k = 0; k < kc; ++k) dst[(size_t)k * stride + r] = 0.0f;
}

// B[p0 .. p0+kc, j0 .. j0+cols] -> panel of width `width`, columns past `cols` zero.
void pack_b(const float* B, int ldb, int cols, int kc, int width, float* dst) {
    for (int k = 0; k < kc; ++k) {
        float* d = dst + (size_t)k * width;
        std::copy(B + (size_t)k * ldb, B + (size_t)k * ldb + cols, d);
        std::fill(d + cols, d + width, 0.0f);
    }
}

// One C = act(A @ B + bias) on strided operands, single-threaded: the whole
// BLIS loop nest. Leading dimensions are separate from M, N, K so that a
// thread can run it on a slice of the full problem.
struct Slice {
    int M, N, K;
    const float* A;
    ptrdiff_t lda;
    const float* B;
    ptrdiff_t ldb;
    const float* B_end;  // one past the last float of the whole B (how far a read may go)
    float* C;
    ptrdiff_t ldc;
    const float* bias;  // already offset to column 0 of the slice, or nullptr
    bool relu;
};

// Small M (at most two A panels, e.g. the MLP at batch 1..24): nothing would
// reuse a packed B panel, so packing B (or blocking K to keep it in L1) is pure
// overhead. B is read in place, the whole K in one pass. The ragged last panel
// is read in place too, its extra columns are computed and discarded, except
// for the last row(s), where reading a full vector would run past the end of
// B: those few rows come from a small zero-padded copy.
void small_m(const Slice& s, const MicroKernels& uk) {
    const int M = s.M, N = s.N, K = s.K;
    const int W = uk.w, MR = uk.mr, NR = 2 * W;
    static thread_local GrowBuffer a_buf, b_buf;
    // Panels as tall as their rows (no zero padding to MR); one row is already
    // a panel (unit stride) and is used in place.
    float* Ap = a_buf.get((size_t)K * M);
    const int npanels_a = (M + MR - 1) / MR;
    for (int ip = 0; ip < npanels_a && M > 1; ++ip)
        pack_a(s.A + (size_t)ip * MR * s.lda, (int)s.lda, std::min(MR, M - ip * MR), K, std::min(MR, M - ip * MR),
               Ap + (size_t)ip * K * MR);

    for (int j0 = 0; j0 < N; j0 += NR) {
        const int cols = std::min(NR, N - j0);
        const int nv = cols <= W ? 0 : 1;
        const int width = (nv + 1) * W;
        const float* panel = s.B + j0;
        // Rows k with panel + k*ldb + width <= B_end can be read whole in place.
        const ptrdiff_t room = s.B_end - panel - width;
        const int k_safe = room < 0 ? 0 : (int)std::min<ptrdiff_t>(K, room / s.ldb + 1);
        float* tail = nullptr;
        if (k_safe < K) {
            tail = b_buf.get((size_t)(K - k_safe) * width);
            pack_b(panel + (size_t)k_safe * s.ldb, (int)s.ldb, cols, K - k_safe, width, tail);
        }
        for (int ip = 0; ip < npanels_a; ++ip) {
            Tile t;
            t.m = std::min(MR, M - ip * MR);
            t.a = M > 1 ? Ap + (size_t)ip * K * MR : s.A;
            t.as = t.m;
            t.c = s.C + (size_t)ip * MR * s.ldc + j0;
            t.ldc = s.ldc;
            t.n = cols;
            const TileFn fn = uk.fn[t.m - 1][nv];
            t.accumulate = false;
            if (k_safe > 0) {  // the in-place rows
                t.kc = k_safe;
                t.b = panel;
                t.ldb = s.ldb;
                const bool done = k_safe == K;
                t.bias = done && s.bias ? s.bias + j0 : nullptr;
                t.relu = done && s.relu;
                fn(t);
                t.accumulate = true;
            }
            if (tail) {  // the copied last rows, then the epilogue
                t.kc = K - k_safe;
                t.a += (size_t)k_safe * t.as;
                t.b = tail;
                t.ldb = width;
                t.bias = s.bias ? s.bias + j0 : nullptr;
                t.relu = s.relu;
                fn(t);
            }
        }
    }
}

// The full BLIS loop nest on one slice, single-threaded: K x N blocks of B and
// M x K blocks of A packed into panels, every micro-tile of the block computed.
void blocked_serial(const Slice& s, const MicroKernels& uk) {
    const int M = s.M, N = s.N, K = s.K;
    const int W = uk.w, MR = uk.mr, NR = 2 * W;
    if (M <= 2 * MR) {
        small_m(s, uk);
        return;
    }
    const int MC = MC_PANELS * MR;
    // Even-sized K blocks (784 -> 4 x 196, not 3 x 256 + 16).
    const int kblocks = (K + KC - 1) / KC;
    const int kc_max = (K + kblocks - 1) / kblocks;

    // Scratch of this thread, grown once and reused by every later call.
    static thread_local GrowBuffer a_buf, b_buf;
    float* Bp = b_buf.get((size_t)kc_max * round_up(std::min(N, NC), NR));
    float* Ap = a_buf.get((size_t)kc_max * round_up(std::min(M, MC), MR));

    for (int jc = 0; jc < N; jc += NC) {
        const int nc = std::min(NC, N - jc);
        const int npanels_b = (nc + NR - 1) / NR;
        for (int pc = 0; pc < K; pc += kc_max) {
            const int kc = std::min(kc_max, K - pc);
            const bool first = pc == 0, last = pc + kc == K;
            for (int jp = 0; jp < npanels_b; ++jp)
                pack_b(s.B + (size_t)pc * s.ldb + jc + jp * NR, (int)s.ldb, std::min(NR, nc - jp * NR), kc, NR,
                       Bp + (size_t)jp * kc * NR);
            for (int ic = 0; ic < M; ic += MC) {
                const int mc = std::min(MC, M - ic);
                const int npanels_a = (mc + MR - 1) / MR;
                for (int ip = 0; ip < npanels_a; ++ip)
                    pack_a(s.A + (size_t)(ic + ip * MR) * s.lda + pc, (int)s.lda, std::min(MR, mc - ip * MR), kc, MR,
                           Ap + (size_t)ip * kc * MR);
                for (int jp = 0; jp < npanels_b; ++jp) {
                    const int j0 = jc + jp * NR;
                    const int cols = std::min(NR, nc - jp * NR);
                    Tile t;
                    t.kc = kc;
                    t.b = Bp + (size_t)jp * kc * NR;
                    t.ldb = NR;
                    t.as = MR;
                    t.ldc = s.ldc;
                    t.n = cols;
                    t.accumulate = !first;
                    t.bias = last && s.bias ? s.bias + j0 : nullptr;
                    t.relu = last && s.relu;
                    const int nv = cols <= W ? 0 : 1;
                    for (int ip = 0; ip < npanels_a; ++ip) {  // B panel stays in L1 across this loop
                        t.a = Ap + (size_t)ip * kc * MR;
                        t.c = s.C + (size_t)(ic + ip * MR) * s.ldc + j0;
                        t.m = std::min(MR, mc - ip * MR);
                        uk.fn[t.m - 1][nv](t);
                    }
                }
            }
        }
    }
}

void blocked_simd(const GemmProblem& p) {
    const MicroKernels& uk = micro_kernels();
    const Slice all{p.M, p.N, p.K, static_cast<const float*>(p.A), p.K, static_cast<const float*>(p.B), p.N,
                    static_cast<const float*>(p.B) + (size_t)p.K * p.N, p.C, p.N, p.bias, p.act == Act::Relu};
    const int nthreads = (double)p.M * p.N * p.K >= kThreadWork ? max_threads() : 1;
    if (nthreads <= 1) {
        blocked_serial(all, uk);
        return;
    }
#if defined(GEMMPAD_HAVE_OPENMP)
    // Each thread takes a slice of C (rows if M is the long side, else columns,
    // in whole micro-tiles) and runs the serial nest on it, packing its own
    // copy of the operand they share. Packing twice costs O(K*N) against
    // O(M*N*K) of arithmetic, and buys a loop with no barrier: on a machine
    // whose cores are shared, a barrier waits for the slowest, descheduled thread.
    const bool by_rows = p.M / uk.mr >= p.N / (2 * uk.w);
    const int step = by_rows ? uk.mr : 2 * uk.w;
    const int len = by_rows ? p.M : p.N;
    const int chunk = (int)round_up((len + nthreads - 1) / nthreads, step);
#pragma omp parallel for num_threads(nthreads) schedule(static, 1)
    for (int t = 0; t < nthreads; ++t) {
        const int lo = t * chunk, hi = std::min(len, lo + chunk);
        if (lo >= hi) continue;
        Slice s = all;
        if (by_rows) {
            s.M = hi - lo;
            s.A += (size_t)lo * s.lda;
            s.C += (size_t)lo * s.ldc;
        } else {
            s.N = hi - lo;
            s.B += lo;
            s.C += lo;
            if (s.bias) s.bias += lo;
        }
        blocked_serial(s, uk);
    }
#endif
}

}  // namespace
}  // namespace gemmpad::cpu

GEMMPAD_REGISTER_CPU("cpu.02_blocked_simd", "fp32",
                     "packed cache blocks, 12x32 AVX-512 / 6x16 AVX2 register tiles, threads when big",
                     gemmpad::cpu::blocked_simd);
