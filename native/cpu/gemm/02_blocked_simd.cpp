// cpu.02_blocked_simd: the BLIS/GotoBLAS recipe: packed panels, cache blocking, a SIMD register-blocked
// micro-kernel (MR x NR tile of C in registers: 14 x 32 floats with AVX-512, 6 x 16 with AVX2), threads.
// Change from 01: 2*MR FMAs for MR+2 loads instead of 1 for 2; B packed into NR-wide panels (A too when
// N >= 256), KC = 256 so a B panel stays in L1; OpenMP threads when M*N*K >= 2^21; small M (the MLP at
// batch 1..24) packs nothing and streams B once like a GEMV. Bias and ReLU fused into the last store.
// Limit: one row times a wide B with a power-of-two row stride (a TLB miss per row of B); threads that
// other jobs share. Single-threaded comparison with OpenBLAS: NOTES.md.
// Run: gemmpad bench gemm --kernels cpu.02_blocked_simd --sizes 256x100x784
// Profile: perf record -g gemmpad bench gemm --kernels cpu.02_blocked_simd --sizes 256x100x784
// Figure (H200 host 2026-11-30, assets/benchmarks/h200/bench-gemm.json): 256x100x784 112 GFLOP/s = 31.5 % of NumPy
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "../cpu.h"
#include "../simd.h"

namespace gemmpad::cpu {
namespace {

constexpr int kMaxMR = 14;          // largest micro-tile height of any ISA below
constexpr int KC = 256;             // depth of one packed block
constexpr int MC_PANELS = 20;       // A block height, in MR panels
constexpr int NC = 4096;            // B block width (a multiple of every NR)
constexpr double kThreadWork = 1 << 21;  // M*N*K from which threads pay off
constexpr int kPackAMinN = 256;          // N from which A blocks are packed

// One micro-kernel call: C[m, n] (op)= A_panel[., kc] @ B_panel[kc, n].
struct Tile {
    ptrdiff_t kc;       // up to all of K (small_m reads K in one pass)
    const float* a;     // A panel: row r, step k at a[r * ars + k * as]
    ptrdiff_t ars, as;  // packed: ars = 1, as = MR; read in place: ars = lda, as = 1
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
template <int W, int R, int NV, bool PACKED>
GEMMPAD_INLINE void tile_body(const Tile& t) {
    using V = Vec<W>;
    // Packed A has its rows adjacent: constant offsets the compiler folds
    // into the broadcasts, instead of R row offsets held in registers.
    const ptrdiff_t ars = PACKED ? 1 : t.ars;
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
    ptrdiff_t k = 0;
    for (; k + U <= t.kc; k += U) {
        for (int u = 0; u < U; ++u, a += t.as, b += t.ldb) {
            V bv[NV];
            for (int v = 0; v < NV; ++v) bv[v] = loadv<W>(b + v * W);
            for (int r = 0; r < R; ++r) {
                const float ar = a[r * ars];  // broadcast; folds into the FMA's memory operand
                for (int v = 0; v < NV; ++v) acc[u][r][v] += bv[v] * ar;
            }
        }
    }
    for (; k < t.kc; ++k, a += t.as, b += t.ldb)
        for (int r = 0; r < R; ++r)
            for (int v = 0; v < NV; ++v) acc[0][r][v] += loadv<W>(b + v * W) * a[r * ars];
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

constexpr int kRowNV = 8;  // widest one-row tile, in vectors

struct MicroKernels {
    int w;    // floats per vector
    int mr;   // micro-tile height
    TileFn fn[kMaxMR][2];      // A read in place: fn[R-1][NV-1]
    TileFn packed[kMaxMR][2];  // A packed: packed[R-1][NV-1]
    TileFn row[kRowNV];    // one-row tiles up to 8 vectors wide: row[NV-1]
};

template <class Get, size_t... I>
void fill_rows(MicroKernels& k, Get get, std::index_sequence<I...>) {
    ((k.row[I] = get(std::integral_constant<int, 1>{}, std::integral_constant<int, I + 1>{}, std::false_type{})), ...);
}

// One entry point per ISA; everything below them is inlined and compiled for that ISA.
template <int W, int MR, class Get, size_t... I>
MicroKernels make_kernels(Get get, std::index_sequence<I...>) {
    MicroKernels k{W, MR, {}, {}, {}};
    using In = std::false_type;
    using Packed = std::true_type;
    ((k.fn[I][0] = get(std::integral_constant<int, I + 1>{}, std::integral_constant<int, 1>{}, In{}),
      k.fn[I][1] = get(std::integral_constant<int, I + 1>{}, std::integral_constant<int, 2>{}, In{}),
      k.packed[I][0] = get(std::integral_constant<int, I + 1>{}, std::integral_constant<int, 1>{}, Packed{}),
      k.packed[I][1] = get(std::integral_constant<int, I + 1>{}, std::integral_constant<int, 2>{}, Packed{})),
     ...);
    fill_rows(k, get, std::make_index_sequence<kRowNV>{});
    return k;
}

#if defined(GEMMPAD_X86)
template <int R, int NV, bool P>
GEMMPAD_TARGET_AVX512 void tile_avx512(const Tile& t) { tile_body<16, R, NV, P>(t); }
template <int R, int NV, bool P>
GEMMPAD_TARGET_AVX2 void tile_avx2(const Tile& t) { tile_body<8, R, NV, P>(t); }
#endif
template <int R, int NV, bool P>
void tile_generic(const Tile& t) { tile_body<4, R, NV, P>(t); }

const MicroKernels& micro_kernels() {
    static const MicroKernels k = [] {
#if defined(GEMMPAD_X86)
        if (isa() == Isa::Avx512)
            return make_kernels<16, 14>([](auto r, auto nv, auto p) -> TileFn { return &tile_avx512<decltype(r)::value, decltype(nv)::value, decltype(p)::value>; },
                                        std::make_index_sequence<14>{});
        if (isa() == Isa::Avx2)
            return make_kernels<8, 6>([](auto r, auto nv, auto p) -> TileFn { return &tile_avx2<decltype(r)::value, decltype(nv)::value, decltype(p)::value>; },
                                      std::make_index_sequence<6>{});
#endif
        return make_kernels<4, 4>([](auto r, auto nv, auto p) -> TileFn { return &tile_generic<decltype(r)::value, decltype(nv)::value, decltype(p)::value>; },
                                  std::make_index_sequence<4>{});
    }();
    return k;
}

// A[i0 .. i0+rows, p0 .. p0+kc] -> panel of `stride` floats per k (k-major),
// entries for rows past `rows` zero.
void pack_a(const float* A, ptrdiff_t lda, int rows, int kc, int stride, float* dst) {
    for (int r = 0; r < rows; ++r)
        for (int k = 0; k < kc; ++k) dst[(size_t)k * stride + r] = A[r * lda + k];
    for (int r = rows; r < stride; ++r)
        for (int k = 0; k < kc; ++k) dst[(size_t)k * stride + r] = 0.0f;
}

// B[p0 .. p0+kc, j0 .. j0+cols] -> panel of width `width`, columns past `cols` zero.
void pack_b(const float* B, ptrdiff_t ldb, int cols, ptrdiff_t kc, int width, float* dst) {
    for (ptrdiff_t k = 0; k < kc; ++k) {
        float* d = dst + k * width;
        std::copy(B + k * ldb, B + k * ldb + cols, d);
        std::fill(d + cols, d + width, 0.0f);
    }
}

// One C = act(A @ B + bias) on strided operands, single-threaded: the whole
// BLIS loop nest. Leading dimensions are separate from M, N, K so that a
// thread can run it on a slice of the full problem. Every index is 64-bit: a dimension
// may be close to 2^31, where `i + step` in int arithmetic wraps.
struct Slice {
    ptrdiff_t M, N, K;
    const float* A;
    ptrdiff_t lda;
    const float* B;
    ptrdiff_t ldb;
    const float* B_end;  // one past the last float of the whole B (how far a read may go)
    float* C;
    ptrdiff_t ldc;
    const float* bias;  // already offset to column 0 of the slice, or nullptr
    bool relu;
    unsigned presses;  // Ctrl-C: checked between blocks (cpu.h)
};

// Small M (at most two A panels, e.g. the MLP at batch 1..24): nothing would
// reuse a packed panel, so packing (or blocking K to keep a B panel in L1) is
// pure overhead. A and B are read in place, the whole K in one pass. The ragged last panel
// is read in place too, its extra columns are computed and discarded, except
// for the last row(s), where reading a full vector would run past the end of
// B: those few rows come from a small zero-padded copy.
void small_m(const Slice& s, const MicroKernels& uk) {
    const ptrdiff_t M = s.M, N = s.N, K = s.K;
    const int W = uk.w, MR = uk.mr, NR = 2 * W;
    static thread_local GrowBuffer b_buf;
    const ptrdiff_t npanels_a = (M + MR - 1) / MR;
    // One row (batch 1): a single pass over B with up to 8 vectors of C in
    // registers, so B's rows are read once, whole, front to back (the GEMV
    // access pattern) instead of once per 2-vector panel.
    const int step = M == 1 ? kRowNV * W : NR;
    for (ptrdiff_t j0 = 0; j0 < N && !stopped(s.presses); j0 += step) {
        const int cols = (int)std::min<ptrdiff_t>(step, N - j0);
        const int nvec = (cols + W - 1) / W;
        const int width = nvec * W;
        const float* panel = s.B + j0;
        // Rows k with panel + k*ldb + width <= B_end can be read whole in place.
        const ptrdiff_t room = s.B_end - panel - width;
        const ptrdiff_t k_safe = room < 0 ? 0 : std::min<ptrdiff_t>(K, room / s.ldb + 1);
        float* tail = nullptr;
        if (k_safe < K) {
            tail = b_buf.get((size_t)(K - k_safe) * width);
            pack_b(panel + k_safe * s.ldb, s.ldb, cols, K - k_safe, width, tail);
        }
        for (ptrdiff_t ip = 0; ip < npanels_a; ++ip) {
            Tile t;
            t.m = (int)std::min<ptrdiff_t>(MR, M - ip * MR);
            t.a = s.A + ip * MR * s.lda;
            t.ars = s.lda;
            t.as = 1;
            t.c = s.C + ip * MR * s.ldc + j0;
            t.ldc = s.ldc;
            t.n = cols;
            const TileFn fn = M == 1 ? uk.row[nvec - 1] : uk.fn[t.m - 1][nvec - 1];
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
                t.a += k_safe * t.as;
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
    const ptrdiff_t M = s.M, N = s.N, K = s.K;
    const int W = uk.w, MR = uk.mr, NR = 2 * W;
    if (M <= 2 * MR) {
        small_m(s, uk);
        return;
    }
    const int MC = MC_PANELS * MR;
    // Packing A costs about one cycle per element; it pays when many B panels
    // reuse the packed panel (wide N, where power-of-two row strides would
    // otherwise fight over the same L1 sets). For a narrow N (the MLP's 100
    // and 10) the micro-kernel reads A in place: measured 1.3-2.3x faster there.
    const bool pack_a_block = N >= kPackAMinN;
    // Even-sized K blocks (784 -> 4 x 196, not 3 x 256 + 16).
    const ptrdiff_t kblocks = (K + KC - 1) / KC;
    const int kc_max = (int)((K + kblocks - 1) / kblocks);  // <= KC

    // Scratch of this thread, grown once and reused by every later call.
    static thread_local GrowBuffer a_buf, b_buf;
    float* Bp = b_buf.get((size_t)kc_max * round_up(std::min<ptrdiff_t>(N, NC), NR));
    float* Ap = pack_a_block ? a_buf.get((size_t)kc_max * round_up(std::min<ptrdiff_t>(M, MC), MR)) : nullptr;

    for (ptrdiff_t jc = 0; jc < N; jc += NC) {
        const int nc = (int)std::min<ptrdiff_t>(NC, N - jc);
        const int npanels_b = (nc + NR - 1) / NR;
        for (ptrdiff_t pc = 0; pc < K; pc += kc_max) {
            const int kc = (int)std::min<ptrdiff_t>(kc_max, K - pc);
            const bool first = pc == 0, last = pc + kc == K;
            for (int jp = 0; jp < npanels_b; ++jp)
                pack_b(s.B + pc * s.ldb + jc + jp * NR, s.ldb, std::min(NR, nc - jp * NR), kc, NR,
                       Bp + (size_t)jp * kc * NR);
            for (ptrdiff_t ic = 0; ic < M && !stopped(s.presses); ic += MC) {
                const int mc = (int)std::min<ptrdiff_t>(MC, M - ic);
                const int npanels_a = (mc + MR - 1) / MR;
                for (int ip = 0; pack_a_block && ip < npanels_a; ++ip)
                    pack_a(s.A + (ic + ip * MR) * s.lda + pc, s.lda, std::min(MR, mc - ip * MR), kc, MR,
                           Ap + (size_t)ip * kc * MR);
                for (int jp = 0; jp < npanels_b; ++jp) {
                    const ptrdiff_t j0 = jc + jp * NR;
                    const int cols = std::min(NR, nc - jp * NR);
                    Tile t;
                    t.kc = kc;
                    t.b = Bp + (size_t)jp * kc * NR;
                    t.ldb = NR;
                    t.ldc = s.ldc;
                    t.n = cols;
                    t.accumulate = !first;
                    t.bias = last && s.bias ? s.bias + j0 : nullptr;
                    t.relu = last && s.relu;
                    const int nv = cols <= W ? 0 : 1;
                    for (int ip = 0; ip < npanels_a; ++ip) {  // B panel stays in L1 across this loop
                        if (pack_a_block) {
                            t.a = Ap + (size_t)ip * kc * MR;
                            t.ars = 1;
                            t.as = MR;
                        } else {
                            t.a = s.A + (ic + ip * MR) * s.lda + pc;
                            t.ars = s.lda;
                            t.as = 1;
                        }
                        t.c = s.C + (ic + ip * MR) * s.ldc + j0;
                        t.m = std::min(MR, mc - ip * MR);
                        (pack_a_block ? uk.packed : uk.fn)[t.m - 1][nv](t);
                    }
                }
            }
        }
    }
}

void blocked_simd(const GemmProblem& p) {
    const MicroKernels& uk = micro_kernels();
    const Slice all{p.M, p.N, p.K, static_cast<const float*>(p.A), p.K, static_cast<const float*>(p.B), p.N,
                    static_cast<const float*>(p.B) + (size_t)p.K * p.N, p.C, p.N, p.bias, p.act == Act::Relu, p.presses};
    // Each thread takes a slice of C (rows if M is the long side, else columns,
    // in whole micro-tiles) and runs the serial nest on it, packing its own
    // copy of the operand they share. Packing twice costs O(K*N) against
    // O(M*N*K) of arithmetic, and buys a loop with no barrier: on a machine
    // whose cores are shared, a barrier waits for the slowest, descheduled thread.
    const bool by_rows = p.M / uk.mr >= p.N / (2 * uk.w);
    const int step = by_rows ? uk.mr : 2 * uk.w;
    const int64_t len = by_rows ? p.M : p.N;
    // No more threads than micro-tile slices (../threads.h has the rest of the policy).
    const int nthreads = (double)p.M * p.N * p.K >= kThreadWork ? threads_for((len + step - 1) / step) : 1;
    for_each_range(len, nthreads, step, [&](int64_t lo, int64_t hi) {
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
    });
}

}  // namespace
}  // namespace gemmpad::cpu

GEMMPAD_REGISTER_CPU("cpu.02_blocked_simd", "fp32",
                     "packed cache blocks, 14x32 AVX-512 / 6x16 AVX2 register tiles, threads when big",
                     gemmpad::cpu::blocked_simd);
