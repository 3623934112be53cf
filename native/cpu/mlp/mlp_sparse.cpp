// cpu.mlp_sparse: the whole 784-100-100-10 forward pass per input row, skipping every zero input.
// Change from the GEMM ladder layer by layer: at batch 1 a layer is y = sum_i x[i] W[i,:]; a digit is ~80 %
// zeros, so gather the nonzero indices (vpcompressd; AVX2: a left-pack table), add only those rows of W into register
// accumulators, then layers 2-3 and softmax in C++: one call, nothing allocated. Rows with Inf/NaN weights
// are computed densely (0 * Inf = NaN, as NumPy).
// Limit: at batch 1 the Python call costs about as much as the kernel; dense inputs gain nothing.
// Run: gemmpad bench mlp --kernels cpu.mlp_sparse --batches 1
// Profile: perf record -g gemmpad bench mlp --kernels cpu.mlp_sparse --batches 1
// Figure (H200 2026-12-01, assets/benchmarks/h200/bench-mlp.json): batch 1, kernel / end to end: cpu.mlp_sparse 1.6 / 3.2 us, numpy 39.3 / 42.6 us
#include <algorithm>
#include <cmath>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "mlp.h"

namespace gemmpad::cpu::mlp {
namespace {

// Rows a thread must get before another thread joins: a row costs ~0.5-1.5 us and
// waking the OpenMP team a few us. (A fixed threshold of 64 rows made batch 32 the
// slowest point of the sweep on a 16-core host: 58.6 us, vs 16.5 us at batch 64; 8 rows
// left batch 12 at 21 us and 16 at 17-18 on that host, 2 rows 8-9 us: NOTES.md, 2026-11-30.)
constexpr int kRowsPerThread = 2;

// Appends to idx[m ..] the indices from <= i < n with x[i] != 0 (all of them when skipping is not
// allowed); returns the new count. The SIMD gathers below end their last partial step with it.
int append_nonzero(const float* x, int from, int n, bool skip, int* idx, int m) {
    for (int i = from; i < n; ++i) {
        idx[m] = i;
        m += !skip || x[i] != 0.0f;
    }
    return m;
}

// Indices i < n with x[i] != 0 (all of them when skipping is not allowed).
// idx must have room for n + 16 entries.
int gather_nonzero(const float* x, int n, bool skip, int* idx) { return append_nonzero(x, 0, n, skip, idx, 0); }
using GatherFn = int (*)(const float*, int, bool, int*);

#if defined(GEMMPAD_X86)
// The same with AVX-512, 16 inputs per step: compare with zero (unordered,
// so NaN counts as nonzero), compress the indices of the set lanes to the
// front of a register, store it whole, advance by the popcount.
GEMMPAD_TARGET_AVX512 int gather_nonzero_avx512(const float* x, int n, bool skip, int* idx) {
    if (!skip) return gather_nonzero(x, n, skip, idx);
    __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i sixteen = _mm512_set1_epi32(16);
    int m = 0, i = 0;
    for (; i + 16 <= n; i += 16) {
        const __mmask16 nz = _mm512_cmp_ps_mask(_mm512_loadu_ps(x + i), _mm512_setzero_ps(), _CMP_NEQ_UQ);
        _mm512_storeu_si512(idx + m, _mm512_maskz_compress_epi32(nz, lanes));
        m += __builtin_popcount(nz);
        lanes = _mm512_add_epi32(lanes, sixteen);
    }
    return append_nonzero(x, i, n, true, idx, m);
}

// AVX2 has no compress: the 8-bit mask of nonzero lanes picks a row of kLeftPack, the lane numbers of
// its set bits packed to the front, stored whole and advanced by the popcount. A digit row's 784
// inputs in ~0.28 us instead of the scalar loop's ~1.04 (the 2-core Zen 3 VM, 2026-11-30: NOTES.md).
struct LeftPack {
    alignas(32) int32_t lanes[256][8];
    constexpr LeftPack() : lanes{} {
        for (int mask = 0; mask < 256; ++mask)
            for (int bit = 0, k = 0; bit < 8; ++bit)
                if (mask >> bit & 1) lanes[mask][k++] = bit;
    }
};
constexpr LeftPack kLeftPack{};

GEMMPAD_TARGET_AVX2 int gather_nonzero_avx2(const float* x, int n, bool skip, int* idx) {
    if (!skip) return gather_nonzero(x, n, skip, idx);
    __m256i base = _mm256_setzero_si256();
    const __m256i eight = _mm256_set1_epi32(8);
    int m = 0, i = 0;
    for (; i + 8 <= n; i += 8) {
        const int nz = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), _mm256_setzero_ps(), _CMP_NEQ_UQ));
        const __m256i lanes = _mm256_load_si256(reinterpret_cast<const __m256i*>(kLeftPack.lanes[nz]));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(idx + m), _mm256_add_epi32(base, lanes));
        m += __builtin_popcount(nz);
        base = _mm256_add_epi32(base, eight);
    }
    return append_nonzero(x, i, n, true, idx, m);
}
#endif

// y[0 .. NV*W) = act(bias + sum over t of x[idx[t]] * Wt[idx[t], :]).
template <int W, int NV>
GEMMPAD_INLINE void sparse_layer(const float* x, const int* idx, int nnz, const float* Wt, const float* bias,
                                 float* y, bool relu_out) {
    using V = Vec<W>;
    constexpr int LD = NV * W;
    // Few accumulators cannot hide the FMA latency: use U independent sets.
    constexpr int U = NV >= 6 ? 1 : (NV >= 3 ? 2 : 4);
    V acc[U][NV];
    for (int v = 0; v < NV; ++v) acc[0][v] = loadv<W>(bias + v * W);
    for (int u = 1; u < U; ++u)
        for (int v = 0; v < NV; ++v) acc[u][v] = V{};
    int t = 0;
    for (; t + U <= nnz; t += U) {
        for (int u = 0; u < U; ++u) {
            const int i = idx[t + u];
            const float xi = x[i];
            const float* row = Wt + (size_t)i * LD;
            for (int v = 0; v < NV; ++v) acc[u][v] += loadv<W>(row + v * W) * xi;
        }
    }
    for (; t < nnz; ++t) {
        const int i = idx[t];
        const float xi = x[i];
        const float* row = Wt + (size_t)i * LD;
        for (int v = 0; v < NV; ++v) acc[0][v] += loadv<W>(row + v * W) * xi;
    }
    for (int u = 1; u < U; ++u)
        for (int v = 0; v < NV; ++v) acc[0][v] += acc[u][v];
    for (int v = 0; v < NV; ++v) storev<W>(y + v * W, relu_out ? relu<W>(acc[0][v]) : acc[0][v]);
}

template <int W>
GEMMPAD_INLINE void forward_rows(const SparseWeights& w, Input x, float* probs, Hidden hidden, int lo, int hi,
                                 GatherFn gather_nonzero) {
    alignas(64) float h1[kH1P], h2[kH2P], z[kOutP], row[kIn];
    int idx[kIn + 16];
    for (int b = lo; b < hi; ++b) {
        const float* xb = x.f32 + (size_t)b * kIn;
        if (x.u8) {  // this row's pixels as floats, while they are in the cache anyway
            const uint8_t* p = x.u8 + (size_t)b * kIn;
            for (int i = 0; i < kIn; ++i) row[i] = (float)p[i] * kPixelScale;
            xb = row;
        }
        int n = gather_nonzero(xb, kIn, w.finite1, idx);
        sparse_layer<W, kH1P / W>(xb, idx, n, w.W1, w.b1, h1, true);
        n = gather_nonzero(h1, kH1, w.finite2, idx);
        sparse_layer<W, kH2P / W>(h1, idx, n, w.W2, w.b2, h2, true);
        n = gather_nonzero(h2, kH2, w.finite3, idx);
        sparse_layer<W, kOutP / W>(h2, idx, n, w.W3, w.b3, z, false);
        softmax_row(z, probs + (size_t)b * kOut);
        if (hidden.h1) std::copy(h1, h1 + kH1, hidden.h1 + (size_t)b * kH1);
        if (hidden.h2) std::copy(h2, h2 + kH2, hidden.h2 + (size_t)b * kH2);
    }
}

using RowsFn = void (*)(const SparseWeights&, Input, float*, Hidden, int, int);

#if defined(GEMMPAD_X86)
GEMMPAD_TARGET_AVX512 void rows_avx512(const SparseWeights& w, Input x, float* p, Hidden h, int lo, int hi) {
    forward_rows<16>(w, x, p, h, lo, hi, gather_nonzero_avx512);
}
GEMMPAD_TARGET_AVX2 void rows_avx2(const SparseWeights& w, Input x, float* p, Hidden h, int lo, int hi) {
    forward_rows<8>(w, x, p, h, lo, hi, gather_nonzero_avx2);
}
#endif
void rows_generic(const SparseWeights& w, Input x, float* p, Hidden h, int lo, int hi) {
    forward_rows<4>(w, x, p, h, lo, hi, gather_nonzero);
}

RowsFn pick() {
#if defined(GEMMPAD_X86)
    if (isa() == Isa::Avx512) return rows_avx512;
    if (isa() == Isa::Avx2) return rows_avx2;
#endif
    return rows_generic;
}

}  // namespace

void sparse_forward(const SparseWeights& w, Input x, float* probs, int batch, Hidden hidden) {
    static const RowsFn rows = pick();
    const int nthreads = threads_for(batch / kRowsPerThread);  // the policy: ../threads.h
    for_each_range(batch, nthreads, 1, [&](int64_t lo, int64_t hi) { rows(w, x, probs, hidden, (int)lo, (int)hi); });
}

void softmax_rows(float* z, int rows) {
    float tmp[kOut];
    for (int b = 0; b < rows; ++b) {
        float* row = z + (size_t)b * kOut;
        for (int j = 0; j < kOut; ++j) tmp[j] = row[j];
        softmax_row(tmp, row);
    }
}

}  // namespace gemmpad::cpu::mlp
