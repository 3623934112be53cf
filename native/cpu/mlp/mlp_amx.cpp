// cpu.mlp_amx: the whole 784-100-100-10 forward pass on AMX tiles, 16 rows at a time, bf16 products summed in fp32.
// Change from cpu.mlp_sparse: rows go in blocks of 16 and each layer is a dense tile product (TDPBF16PS: 16x32 by
// 32x16 in one instruction), so a weight is read once per 16 rows, not once per row; zero skipping is given up.
// 8-bit pixels enter as the integers they are (exact in bf16), scaled by 1/255 after the sum.
// Limit: bf16 operands (its own bound, gemmpad.runtime.precision); an AMX CPU (Xeon since Sapphire Rapids) and
// Linux 5.16; below ~128 rows slower than cpu.mlp_sparse (a tile product costs the same for 1 row as for 16).
// Run: gemmpad bench mlp --kernels cpu.mlp_amx cpu.mlp_sparse --batches 256 4096
// Profile: perf record -g gemmpad bench mlp --kernels cpu.mlp_amx --batches 4096
// Figure (H200 2026-12-01, assets/benchmarks/h200/bench-mlp.json): batch 4096, kernel / end to end: cpu.mlp_amx 317.2 / 325.9 us, ONNX Runtime CPU 1134.8 / 1134.8 us
#include <algorithm>
#include <cstring>

#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__) && defined(GEMMPAD_ASSEMBLER_HAS_AMX)
#define GEMMPAD_AMX 1
#include <cerrno>
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "mlp.h"

namespace gemmpad::cpu::mlp {
namespace {

// Tile geometry: 16 rows of 64 bytes (32 bf16 inputs, or 16 fp32 sums) in every tile register.
constexpr int kRows = 16, kChunk = 32, kCols = 16, kTile = kChunk * kCols;  // a B tile: 512 bf16
constexpr int kK1 = 800, kK2 = 128;  // 784 and 100 inputs padded to whole chunks
constexpr int kChunks1 = kK1 / kChunk, kChunks2 = kK2 / kChunk, kBlocks1 = kH1P / kCols, kBlocks3 = kOutP / kCols;

// bf16 bits of v, rounded to nearest even; a NaN stays a (quiet) NaN.
uint16_t bf16(float v) {
    uint32_t u;
    std::memcpy(&u, &v, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// W [rows][cols] row-major -> B tiles [chunk][block] of [16 input pairs][16 outputs][2], zero past rows/cols.
std::vector<uint16_t> pack(const float* W, int rows, int cols, int chunks, int blocks) {
    std::vector<uint16_t> out((size_t)chunks * blocks * kTile);
    for (int c = 0; c < chunks; ++c)
        for (int nb = 0; nb < blocks; ++nb)
            for (int kp = 0; kp < kChunk / 2; ++kp)
                for (int n = 0; n < kCols; ++n)
                    for (int j = 0; j < 2; ++j) {
                        const int k = c * kChunk + 2 * kp + j, col = nb * kCols + n;
                        const float v = k < rows && col < cols ? W[(size_t)k * cols + col] : 0.0f;
                        out[((size_t)(c * blocks + nb) * (kChunk / 2) + kp) * 2 * kCols + 2 * n + j] = bf16(v);
                    }
    return out;
}

#if defined(GEMMPAD_AMX)
// The tile instructions as inline assembly, each with a "memory" clobber: GCC's own _tile_loadd does not
// say that it reads memory, so the stores that fill a tile's rows could be moved past it or dropped.
#define AMX_LOAD(t, p, stride) asm volatile("tileloadd (%0,%1,1), %%tmm" #t ::"r"(p), "r"((long)(stride)) : "memory")
#define AMX_STORE(t, p, stride) \
    asm volatile("tilestored %%tmm" #t ", (%0,%1,1)" ::"r"(p), "r"((long)(stride)) : "memory")
#define AMX_ZERO(t) asm volatile("tilezero %%tmm" #t ::)
#define AMX_DOT(t) asm volatile("tdpbf16ps %%tmm7, %%tmm6, %%tmm" #t ::)  // tmm t += A (tmm6) . B (tmm7)

// Every tile register 16 rows of 64 bytes (palette 1). Per thread: each OpenMP thread loads it.
struct alignas(64) TileConfig {
    uint8_t palette = 1, start_row = 0, reserved[14] = {};
    uint16_t colsb[16] = {};
    uint8_t rows[16] = {};
};

void load_tile_config() {
    TileConfig cfg;
    for (int t = 0; t < 8; ++t) cfg.colsb[t] = 64, cfg.rows[t] = kRows;
    asm volatile("ldtilecfg %0" ::"m"(cfg) : "memory");
}

// C [16][ldc] fp32, columns [0, 16 * BLOCKS) = A [16][CHUNKS * 32] bf16 (row stride lda) times the packed W.
// tmm6 holds A's chunk, tmm7 one B tile; tmm0-5 sum six column blocks at once, a seventh takes a second pass.
template <int CHUNKS, int BLOCKS>
GEMMPAD_INLINE void tile_product(const uint16_t* a, int lda, const uint16_t* w, float* c, int ldc) {
    static_assert(BLOCKS == 1 || BLOCKS == 7, "the passes below cover 1 or 7 column blocks");
    const long sa = 2L * lda, sc = 4L * ldc;
    AMX_ZERO(0);
    if constexpr (BLOCKS == 7) {
        AMX_ZERO(1); AMX_ZERO(2); AMX_ZERO(3); AMX_ZERO(4); AMX_ZERO(5);
    }
    for (int k = 0; k < CHUNKS; ++k) {
        const uint16_t* wk = w + (size_t)k * BLOCKS * kTile;
        AMX_LOAD(6, a + k * kChunk, sa);
        AMX_LOAD(7, wk, 64); AMX_DOT(0);
        if constexpr (BLOCKS == 7) {
            AMX_LOAD(7, wk + 1 * kTile, 64); AMX_DOT(1);
            AMX_LOAD(7, wk + 2 * kTile, 64); AMX_DOT(2);
            AMX_LOAD(7, wk + 3 * kTile, 64); AMX_DOT(3);
            AMX_LOAD(7, wk + 4 * kTile, 64); AMX_DOT(4);
            AMX_LOAD(7, wk + 5 * kTile, 64); AMX_DOT(5);
        }
    }
    AMX_STORE(0, c, sc);
    if constexpr (BLOCKS == 7) {
        AMX_STORE(1, c + 16, sc); AMX_STORE(2, c + 32, sc); AMX_STORE(3, c + 48, sc);
        AMX_STORE(4, c + 64, sc); AMX_STORE(5, c + 80, sc);
        AMX_ZERO(0);
        for (int k = 0; k < CHUNKS; ++k) {
            AMX_LOAD(6, a + k * kChunk, sa);
            AMX_LOAD(7, w + ((size_t)k * BLOCKS + 6) * kTile, 64); AMX_DOT(0);
        }
        AMX_STORE(0, c + 96, sc);
    }
}

#define AMX_FN GEMMPAD_TARGET_AVX512 GEMMPAD_INLINE

// 16 floats -> 16 bf16 at dst: bf16() in vector form.
AMX_FN void store_bf16(uint16_t* dst, __m512 v) {
    const __m512i u = _mm512_castps_si512(v), high = _mm512_srli_epi32(u, 16);
    const __m512i odd = _mm512_and_si512(high, _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7fff))), 16);
    r = _mm512_mask_or_epi32(r, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), high, _mm512_set1_epi32(0x40));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), _mm512_cvtepi32_epi16(r));
}

// One input row into A: floats rounded to bf16, or 8-bit pixels as the integers 0-255 (exact in bf16:
// a float's top 16 bits, with nothing to round).
AMX_FN void row_to_bf16(Input x, size_t b, uint16_t* dst) {
    if (x.u8) {
        const uint8_t* p = x.u8 + b * kIn;
        for (int i = 0; i < kIn; i += 16) {
            const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
            const __m512 v = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(bytes));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                                _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(v), 16)));
        }
    } else {
        const float* p = x.f32 + b * kIn;
        for (int i = 0; i < kIn; i += 16) store_bf16(dst + i, _mm512_loadu_ps(p + i));
    }
}

// h = relu(c * scale + bias) for one row of a layer's sums (112 columns, the padding's 0): into `keep`
// (100 floats, the caller's hidden array) where asked, and as bf16 into the next layer's A row.
AMX_FN void activate(const float* c, float scale, const float* bias, float* keep, uint16_t* next) {
    alignas(64) float h[kH1P];
    for (int v = 0; v < kH1P; v += 16) {
        const Vec<16> s = loadv<16>(c + v) * scale + loadv<16>(bias + v);
        storev<16>(h + v, relu<16>(s));  // NaN stays NaN, as NumPy's maximum
        store_bf16(next + v, _mm512_load_ps(h + v));
    }
    if (keep) std::copy(h, h + kH1, keep);
}

GEMMPAD_TARGET_AVX512 void tile_rows(const TileWeights& w, Input x, float* probs, Hidden hidden, int lo, int hi) {
    load_tile_config();
    alignas(64) uint16_t a1[kRows][kK1];  // the block's inputs
    alignas(64) uint16_t a2[kRows][kK2];  // h1, then h2, as the next layer's inputs
    alignas(64) float c[kRows][kH1P];     // a layer's sums
    for (int r = 0; r < kRows; ++r) {     // padding: zero inputs meet zero weights
        std::fill(a1[r] + kIn, a1[r] + kK1, 0);
        std::fill(a2[r] + kH1P, a2[r] + kK2, 0);
    }
    const float scale = x.u8 ? kPixelScale : 1.0f;
    for (int r0 = lo; r0 < hi; r0 += kRows) {
        const int n = std::min(kRows, hi - r0);
        for (int r = 0; r < kRows; ++r) {
            if (r < n) row_to_bf16(x, (size_t)(r0 + r), a1[r]);
            else std::fill(a1[r], a1[r] + kIn, 0);  // a short last block: rows computed, never written
        }
        tile_product<kChunks1, kBlocks1>(a1[0], kK1, w.W1.data(), c[0], kH1P);
        for (int r = 0; r < kRows; ++r)
            activate(c[r], scale, w.b1, hidden.h1 && r < n ? hidden.h1 + (size_t)(r0 + r) * kH1 : nullptr, a2[r]);
        tile_product<kChunks2, kBlocks1>(a2[0], kK2, w.W2.data(), c[0], kH1P);
        for (int r = 0; r < kRows; ++r)
            activate(c[r], 1.0f, w.b2, hidden.h2 && r < n ? hidden.h2 + (size_t)(r0 + r) * kH2 : nullptr, a2[r]);
        tile_product<kChunks2, kBlocks3>(a2[0], kK2, w.W3.data(), c[0], kH1P);
        for (int r = 0; r < n; ++r) {
            float z[kOut];
            for (int j = 0; j < kOut; ++j) z[j] = c[r][j] + w.b3[j];
            softmax_row(z, probs + (size_t)(r0 + r) * kOut);
        }
    }
    asm volatile("tilerelease" ::: "memory");  // the thread's 8 KB of tile state need not be saved any more
}

std::string check_amx() {
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) || !(edx & (1u << 24)) || !(edx & (1u << 22)))
        return "this CPU has no AMX bf16 tiles (Intel Xeon since Sapphire Rapids, 2023)";
    if (isa() != Isa::Avx512)
        return std::getenv("GEMMPAD_CPU_ISA") ? "GEMMPAD_CPU_ISA leaves out AVX-512, which cpu.mlp_amx converts with"
                                              : "this CPU has AMX but not the AVX-512 cpu.mlp_amx converts with";
    constexpr long kReqXcompPerm = 0x1023, kXtileData = 18;  // asm/prctl.h, the XFEATURE number of tile data
    if (syscall(SYS_arch_prctl, kReqXcompPerm, kXtileData) != 0)  // ENOSPC: a thread's signal stack is too small
        return std::string("Linux did not let this process use AMX tiles (arch_prctl: ") + std::strerror(errno) +
               "; Linux 5.16 or later grants them)";
    return "";
}
#else
std::string check_amx() {
    return "this build of gemmpad has no AMX code (it needs x86-64 Linux and an assembler that knows AMX: "
           "binutils 2.36 or later)";
}
#endif

}  // namespace

TileWeights pack_tile_weights(const float* W1, const float* W2, const float* W3, const SparseWeights& padded) {
    TileWeights t;
    t.W1 = pack(W1, kIn, kH1, kChunks1, kBlocks1);
    t.W2 = pack(W2, kH1, kH2, kChunks2, kBlocks1);
    t.W3 = pack(W3, kH2, kOut, kChunks2, kBlocks3);
    t.b1 = padded.b1, t.b2 = padded.b2, t.b3 = padded.b3;
    return t;
}

const std::string& amx_unavailable() {
    static const std::string why = check_amx();
    return why;
}

void tile_forward(const TileWeights& w, Input x, float* probs, int batch, Hidden hidden) {
#if defined(GEMMPAD_AMX)
    const int nthreads = threads_for((batch + kRows - 1) / kRows);  // the policy: ../threads.h
    for_each_range(batch, nthreads, kRows,
                   [&](int64_t lo, int64_t hi) { tile_rows(w, x, probs, hidden, (int)lo, (int)hi); });
#else
    (void)w, (void)x, (void)probs, (void)batch, (void)hidden;
#endif
}

}  // namespace gemmpad::cpu::mlp
