// The Hopper rungs' kernel (cuda.10-16, 18 and 20): warpgroup MMA (wgmma) fed by the TMA copy engine
// through an mbarrier pipeline, one warpgroup that loads and two that multiply. It is ONE kernel
// with named steps, launch<Op, Steps>: each rung's file picks the operand type (Fp16, Bf16, Tf32,
// Tf32Swap, Fp8, Fp8Swap) and its step (Steps, Persistent, TmaStore, Multicast); README.md beside it describes the
// design, the options and what each step measured.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "../ptx/cluster.cuh"
#include "../ptx/cp_async.cuh"
#include "../ptx/mbarrier.cuh"
#include "../ptx/smem.cuh"
#include "../ptx/tma.cuh"
#include "../ptx/wgmma.cuh"
#include "../support/buffer.cuh"
#include "../support/registry.cuh"
#include "epilogue.cuh"
#include "splitk.cuh"

namespace gemmpad::cuda::hopper {
namespace {  // each rung's file compiles its own copy

// Block tile: BM x BN of C, or BN x BM for the SWAP operand kinds (below), which compute C^T.
constexpr int BM = 128, BN = 256;
constexpr int ROW_BYTES = 128;     // a k-tile row: 64 halves, 32 floats or 128 fp8 = one 128-byte swizzle row
constexpr int STEP_BYTES = 32;     // k per wgmma: 16 halves, 8 floats or 32 fp8
constexpr int STAGES = 4;
constexpr int CONSUMERS = 2;                    // warpgroups that multiply (64 rows each)
constexpr int THREADS = 128 * (1 + CONSUMERS);  // + the producer warpgroup
constexpr int BOX_N_BYTES = 128;                // a row-major B tile is loaded as 128-byte-wide boxes
constexpr int STAGE_BYTES = (BM + BN) * ROW_BYTES;  // the A and B tiles of one k-tile: 48 KB
// TMA_STORE (cuda.15): 16 KB of C per consumer warpgroup staged for the copy engine: per warp two 2 KB slots,
// each a 16-row x 32-float box of the warp's own rows; for the SWAP types (whose warps hold columns of C) per
// warp pair two 4 KB slots, each a 32 x 32 box.
constexpr int STORE_BOX_COLS = ROW_BYTES / sizeof(float), STORE_BOX_BYTES = 64 * ROW_BYTES;
constexpr int WARP_BOX_ROWS = 16, WARP_BOX_BYTES = WARP_BOX_ROWS * ROW_BYTES;
constexpr int STORE_BYTES = CONSUMERS * 2 * STORE_BOX_BYTES;
template <bool TMA_STORE>
constexpr int smem_bytes() {  // stages (+ store boxes) + barriers + alignment slack
    return STAGES * STAGE_BYTES + (TMA_STORE ? STORE_BYTES : 0) + 2 * STAGES * 8 + 1024;
}
constexpr int GROUP_M = 8;                                                // tile-rows per raster group
static_assert(BM == 64 * CONSUMERS, "each consumer warpgroup owns 64 rows");

// D[64x256] += A[64xk] * B[kx256], fp32 accumulators (128 per thread). INSTR names the shape
// and types; SRC the A and B operands (descriptors, or A's registers and B's descriptor); TAIL
// the scale (and, for 16-bit types, transpose) immediates; SCALE_D the operand that is 1 (0
// would ignore the old D); the inputs follow.
#define GEMMPAD_WGMMA_N256(...) GEMMPAD_WGMMA_N256_(__VA_ARGS__)  // expands GEMMPAD_SMEM_AB first
#define GEMMPAD_WGMMA_N256_(INSTR, TAIL, SRC, SCALE_D, ...)                                                            \
    asm volatile(                                                                                                      \
        "{\n.reg .pred p;\nsetp.ne.b32 p, " SCALE_D ", 0;\n" INSTR                                                      \
        "\n{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                                    \
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                             \
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                             \
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "                             \
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "                             \
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "                             \
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "                  \
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "             \
        SRC ", p, " TAIL ";\n}\n"                                                                                      \
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),              \
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),        \
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),      \
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),      \
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),      \
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),      \
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),      \
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),      \
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),      \
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),      \
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),      \
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),      \
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),  \
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]),            \
          "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]),            \
          "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]),            \
          "+f"(d[125]), "+f"(d[126]), "+f"(d[127])                                                                     \
        : __VA_ARGS__)
#define GEMMPAD_SMEM_AB "%128, %129", "%130", "l"(desc_a), "l"(desc_b), "r"(1)
// The SWAP operand types': A's four registers a[], B's descriptor.
#define GEMMPAD_REGS_A_SMEM_B \
    "{%128, %129, %130, %131}, %132", "%133", "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1)

// B's k rows as they come: row k of a k-tile is row k of the stage's tile.
struct InOrder {
    __host__ __device__ static constexpr int row(int k) { return k; }
};

// The operand types: the element type, the registry's InType and TMA's name for it, and whether
// B reaches shared memory transposed (B_K_MAJOR: [N, K], as A is [M, K]; otherwise row-major
// [K, N], "N-major" to wgmma, which only 16-bit types may read); each adds its name and its wgmma.
template <class T_, InType IN, CUtensorMapDataType TMA, bool K_MAJOR>
struct Operand {
    static constexpr bool SWAP = false;
    using T = T_;
    static constexpr InType in_type = IN;
    static constexpr CUtensorMapDataType tma_type = TMA;
    static constexpr bool B_K_MAJOR = K_MAJOR;
    // Where row k of B's k-tile lies in the stage. The SWAP types reorder the rows, B_ROW_GROUP at a time,
    // for their fragment loads' banks, and load B through their own map_b and load_b.
    using BRows = InOrder;
    static constexpr int B_ROW_GROUP = 1;
    // Which of its warpgroup's 64 rows (of C^T with SWAP) accumulator rows g and g + 8 (h = 0, 1) of
    // warp w hold: 16w + g + 8h, as wgmma lays them out (Fp8Swap renumbers its columns of C).
    __device__ static int row_of(int warp, int g, int h) { return 16 * warp + g + 8 * h; }
    struct Fragments {  // SWAP operands: wgmma's A from registers (none here)
        __device__ Fragments(int, int, int) {}
    };
};
struct Fp16 : Operand<__half, InType::F16, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, false> {
    static constexpr const char* type_name = "float16";
    __device__ static void mma(float (&d)[128], uint64_t desc_a, uint64_t desc_b) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
        GEMMPAD_WGMMA_N256("wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16", "1, 1, 0, 1", GEMMPAD_SMEM_AB);
#endif
    }
};
struct Bf16 : Operand<__nv_bfloat16, InType::BF16, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, false> {
    static constexpr const char* type_name = "bfloat16";
    __device__ static void mma(float (&d)[128], uint64_t desc_a, uint64_t desc_b) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
        GEMMPAD_WGMMA_N256("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16", "1, 1, 0, 1", GEMMPAD_SMEM_AB);
#endif
    }
};
// tf32 reads float32 bit patterns (the tensor cores ignore the low 13 mantissa bits) and
// takes K-major operands only: B is transposed on the way in (launch()).
struct Tf32 : Operand<float, InType::F32, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, true> {
    static constexpr const char* type_name = "float32";
    __device__ static void mma(float (&d)[128], uint64_t desc_a, uint64_t desc_b) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
        GEMMPAD_WGMMA_N256("wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32", "1, 1", GEMMPAD_SMEM_AB);
#endif
    }
};
// fp8 (e4m3): 32 k per instruction, both operands K-major as for tf32 (wgmma transposes only
// 16-bit operands): B is transposed on the way in.
struct Fp8 : Operand<__nv_fp8_e4m3, InType::F8E4M3, CU_TENSOR_MAP_DATA_TYPE_UINT8, true> {
    static constexpr const char* type_name = "float8_e4m3";
    __device__ static void mma(float (&d)[128], uint64_t desc_a, uint64_t desc_b) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
        GEMMPAD_WGMMA_N256("wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3", "1, 1", GEMMPAD_SMEM_AB);
#endif
    }
};
// tf32 without the transpose: C^T = B^T A^T. wgmma's A operand (B^T, 64 n x 8 k per warpgroup)
// comes from registers, loaded from the row-major B tile in any layout; its B operand is A's
// tile, K-major as it lies in memory. Each warpgroup then owns 64 columns of C.
struct Tf32Swap : Tf32 {
    static constexpr bool B_K_MAJOR = false, SWAP = true;
    // Lane (g, t) of warp w holds B[k = t, t + 4][n = 16w + g, + 8] of each k8 step (fragment r:
    // n + 8 (r & 1), k + 4 (r >> 1)), read from 32-column boxes of 128-byte rows whose 16-byte
    // chunks TMA swizzles by the row % 8. One load takes rows k = 0-3 (or 4-7) of a step, 8 columns
    // (two chunks) each: BRows puts them at rows 0, 2, 4, 6 (1, 3, 5, 7) of the step, whose swizzles
    // move the chunk pair to four different places (k's bits 0-1 up one, bit 2 to the bottom).
    struct BRows {
        __host__ __device__ static constexpr int row(int k) { return (k & ~7) | ((k & 3) << 1) | ((k >> 2) & 1); }
    };
    static constexpr int B_ROW_GROUP = 8;
    // Row-major B (K x N floats, rows ld apart, K a multiple of 8) as 4 dimensions, innermost first:
    // n, k's bit 2, bits 0-1, k / 8, so that a box of 32 k x 32 n lands in BRows's order.
    static CUtensorMap map_b(const void* b, int K, int N, int ld, const std::string& what) {
        const uint64_t dims[4] = {(uint64_t)N, 2, 4, (uint64_t)K / 8};
        const uint64_t strides[3] = {16ull * ld, 4ull * ld, 32ull * ld};
        const uint32_t box[4] = {BOX_N_BYTES / 4, 2, 4, ROW_BYTES / 4 / 8};
        return tensor_map(b, tma_type, 4, dims, strides, box, CU_TENSOR_MAP_SWIZZLE_128B,
                          what + " (" + std::to_string(K) + "x" + std::to_string(N) + ", rows reordered)");
    }
    // The stage's B tile from k-tile k0 and column n0: BM columns (tile_cols), four 32-column boxes.
    __device__ static void load_b(unsigned char* dst, const CUtensorMap* map, int n0, int k0, uint64_t* bar) {
        constexpr int box_n = BOX_N_BYTES / sizeof(float), bk = ROW_BYTES / sizeof(float);
#pragma unroll
        for (int j = 0; j < BM / box_n; ++j) tma_load_4d(dst + j * bk * BOX_N_BYTES, map, n0 + j * box_n, 0, 0, k0 / 8, bar);
    }
    struct Fragments {
        unsigned off[4];  // from the stage's B tile
        __device__ Fragments(int c, int warp, int lane) {
            constexpr int box_n = BOX_N_BYTES / sizeof(float), bk = ROW_BYTES / sizeof(float);  // 32, 32
            const int g = lane / 4, t = lane % 4;
#pragma unroll
            for (int r = 0; r < 4; ++r) {
                const int n = c * 64 + warp * 16 + g + 8 * (r & 1), row = BRows::row(t + 4 * (r >> 1)), col = n % box_n;
                off[r] = (n / box_n) * bk * BOX_N_BYTES + row * ROW_BYTES +
                         ((((col >> 2) ^ (row & 7)) << 4) | ((col & 3) << 2));
            }
        }
        __device__ void load(unsigned (&frag)[ROW_BYTES / STEP_BYTES][4], unsigned b_tile) const {
#pragma unroll
            for (int kk = 0; kk < ROW_BYTES / STEP_BYTES; ++kk)
#pragma unroll
                for (int r = 0; r < 4; ++r)
                    asm volatile("ld.shared.b32 %0, [%1];\n"
                                 : "=r"(frag[kk][r])
                                 : "r"(b_tile + off[r] + kk * 8 * ROW_BYTES));
        }
    };
    __device__ static void mma(float (&d)[128], const unsigned (&a)[4], uint64_t desc_b) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
        GEMMPAD_WGMMA_N256("wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32", "1, 1", GEMMPAD_REGS_A_SMEM_B);
#endif
    }
};
// fp8 without the transpose, as Tf32Swap: a lane's fragment register holds 4 bytes of k for one
// column n, which the row-major B tile keeps in 4 rows. ldmatrix .trans reads 16-bit pairs of
// columns from rows k, k + 1 (k = 4t: matrices of rows 0, 1, 4, 5, ... and 2, 3, 6, 7, ...), and two
// byte permutes per pair make the registers of columns 2g and 2g + 1. So accumulator rows g and
// g + 8 of warp w hold columns 16w + 2g and 16w + 2g + 1 of the warpgroup's 64 (row_of).
struct Fp8Swap : Fp8 {
    static constexpr bool B_K_MAJOR = false, SWAP = true;
    __device__ static int row_of(int warp, int g, int h) { return 16 * warp + 2 * g + h; }
    // In each group of 16 k, the 8 rows of one ldmatrix matrix (k's bits 3, 2, 0 varying, bit 1 fixed) lie
    // together, as rows 8 b1 + 4 b3 + 2 b2 + b0, so the 128-byte swizzle (by row % 8) spreads them over
    // all 32 banks.
    struct BRows {
        __host__ __device__ static constexpr int row(int k) {
            return (k & ~15) | ((k & 2) << 2) | ((k >> 1) & 6) | (k & 1);
        }
    };
    static constexpr int B_ROW_GROUP = 16;
    // Row-major B (K x N bytes, rows ld apart, K a multiple of 16) as 5 dimensions, innermost first:
    // n, k's bit 0, bits 2-3, bit 1, k / 16, so that a box of 128 k x 128 n lands in BRows's order.
    static CUtensorMap map_b(const void* b, int K, int N, int ld, const std::string& what) {
        const uint64_t dims[5] = {(uint64_t)N, 2, 4, 2, (uint64_t)K / 16};
        const uint64_t strides[4] = {(uint64_t)ld, 4ull * ld, 2ull * ld, 16ull * ld};
        const uint32_t box[5] = {BOX_N_BYTES, 2, 4, 2, ROW_BYTES / 16};
        return tensor_map(b, tma_type, 5, dims, strides, box, CU_TENSOR_MAP_SWIZZLE_128B,
                          what + " (" + std::to_string(K) + "x" + std::to_string(N) + ", rows reordered)");
    }
    // The stage's B tile from k-tile k0 and column n0: one box, BM (tile_cols) bytes wide.
    __device__ static void load_b(unsigned char* dst, const CUtensorMap* map, int n0, int k0, uint64_t* bar) {
        static_assert(BM == BOX_N_BYTES, "the tile is one box wide");
        tma_load_5d(dst, map, n0, 0, 0, 0, k0 / 16, bar);
    }
    struct Fragments {
        unsigned off;  // this lane's ldmatrix row in the first k32 step, from the stage's B tile
        __device__ Fragments(int c, int warp, int lane) {
            // lane 8m + r: row r of matrix m, k = 16 (m / 2) + 2 (m % 2) + 4 (r / 2) + r % 2, which
            // BRows puts at row 8m + r = lane; the warp's 16 columns are 16-byte chunk 4c + w
            // of a 128-byte row, swizzled by the row % 8
            off = lane * ROW_BYTES + (((4 * c + warp) ^ (lane & 7)) << 4);
        }
        __device__ void load(unsigned (&frag)[ROW_BYTES / STEP_BYTES][4], unsigned b_tile) const {
#pragma unroll
            for (int kk = 0; kk < ROW_BYTES / STEP_BYTES; ++kk) {  // k32 steps: 32 rows on, same phases
                unsigned d[4];
                asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                             : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                             : "r"(b_tile + off + kk * 32 * ROW_BYTES));
                // d[0]: bytes (k 4t, n 2g), (4t, 2g + 1), (4t + 1, 2g), (4t + 1, 2g + 1); d[1] the same of
                // k 4t + 2, 4t + 3; d[2], d[3] those 16 rows on
                frag[kk][0] = __byte_perm(d[0], d[1], 0x6420), frag[kk][1] = __byte_perm(d[0], d[1], 0x7531);
                frag[kk][2] = __byte_perm(d[2], d[3], 0x6420), frag[kk][3] = __byte_perm(d[2], d[3], 0x7531);
            }
        }
    };
    __device__ static void mma(float (&d)[128], const unsigned (&a)[4], uint64_t desc_b) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
        GEMMPAD_WGMMA_N256("wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3", "1, 1", GEMMPAD_REGS_A_SMEM_B);
#endif
    }
};
#undef GEMMPAD_SMEM_AB
#undef GEMMPAD_REGS_A_SMEM_B
#undef GEMMPAD_WGMMA_N256_
#undef GEMMPAD_WGMMA_N256

// Rows and columns of C one block computes: BM x BN, or BN x BM when Op computes C^T.
template <class Op>
constexpr int tile_rows() { return Op::SWAP ? BN : BM; }
template <class Op>
constexpr int tile_cols() { return Op::SWAP ? BM : BN; }
// The work units a grid walks, rows x columns of them: tiles, or with multicast (pair 2) pairs of tiles,
// one above the other (sharing B's tile) or, when Op computes C^T, side by side (sharing A's). The kernel
// walks them; plan() sizes a multicast grid by them.
struct UnitGrid {
    int rows, cols;
};
template <class Op>
__host__ __device__ constexpr UnitGrid unit_grid(int tiles_m, int tiles_n, int pair) {
    return Op::SWAP ? UnitGrid{tiles_m, ceil_div(tiles_n, pair)} : UnitGrid{ceil_div(tiles_m, pair), tiles_n};
}

// Where the producer finds an operand: through its tensor map (chunk 0), or, when its rows are
// not 16-byte aligned as TMA needs (the MLP's N = 100 in 16 bits), with cp.async chunks of
// `chunk` bytes (4 or 8) from `ptr`, rows `ld` elements apart.
struct Source {
    const void* ptr;
    int ld, chunk;
};

// Copies a [ROWS, COLS] piece of a row-major operand (from row r0 and column c0) into a stage
// laid out as TMA lays its boxes: 128-byte rows, boxes of 128 bytes along the columns one after
// the other, 16-byte chunks swizzled by the row. Along K (the columns, or the rows with K_ROWS)
// everything past row_end / col_end is zero-filled: both operands' padding meets there. Rows or
// columns past M or N are not copied at all (they only reach outputs that are never stored);
// the chunks copied are spread evenly over the 128 producer threads.
template <class T, int ROWS, int COLS, int W, bool K_ROWS, class Rows>
__device__ __forceinline__ void copy_tile(unsigned dst, const T* src, int ld, int r0, int row_end, int c0,
                                          int col_end) {
    constexpr int E = W / sizeof(T), BOX = ROW_BYTES / sizeof(T);  // elements per chunk, per 128-byte row
    const int rows = K_ROWS ? ROWS : max(0, min(ROWS, row_end - r0));
    const int per_row = K_ROWS ? ceil_div(max(0, min(COLS, col_end - c0)), E) : COLS / E;
    if (per_row == 0) return;
    // Chunk q = threadIdx.x + 128 i is (row r, chunk cc) of the piece, stepped without a
    // division per chunk (a runtime divide is ~20 dependent instructions).
    const int dr = 128 / per_row, dc = 128 - dr * per_row;
    int r = threadIdx.x / per_row, cc = threadIdx.x - r * per_row;
#pragma unroll 4
    while (r < rows) {
        const int c = cc * E, gr = r0 + r, gc = c0 + c;
        const int at = Rows::row(r);  // the row's place in the tile
        const unsigned dense = (c / BOX) * ROWS * ROW_BYTES + at * ROW_BYTES + (c % BOX) * sizeof(T);
        const int valid = gr < row_end ? max(0, min(E, col_end - gc)) : 0;
        cp_async_zfill<W>(dst + (dense ^ (((dense >> 7) & 7) << 4)), valid ? src + (size_t)gr * ld + gc : src,
                          valid * (int)sizeof(T));
        r += dr;
        cc += dc;
        if (cc >= per_row) {
            cc -= per_row;
            ++r;
        }
    }
}
template <class T, int ROWS, int COLS, bool K_ROWS, class Rows = InOrder>
__device__ __forceinline__ void copy_tile(const Source& from, unsigned dst, int r0, int row_end, int c0, int col_end) {
    const T* src = static_cast<const T*>(from.ptr);
    if (from.chunk == 8) copy_tile<T, ROWS, COLS, 8, K_ROWS, Rows>(dst, src, from.ld, r0, row_end, c0, col_end);
    else copy_tile<T, ROWS, COLS, 4, K_ROWS, Rows>(dst, src, from.ld, r0, row_end, c0, col_end);
}

// Split-K's partial tile in shared memory: [TM][TN + 4] floats (the padding shifts banks).
template <class Op>
constexpr int partial_pitch() { return tile_cols<Op>() + 4; }

// C[M, N] = act(A[M, K] @ B + bias), operands through the two tensor maps or cp.async (Source),
// B as Op says, over k-tiles [blockIdx.y * kt_per_split, + kt_per_split). Block x takes tiles x,
// x + gridDim.x, ... (one each when the grid has a block per tile; a persistent grid has one per
// SM, and the producer loads the next tile while the consumers store this one). With
// gridDim.y > 1 (split-K, one tile per block) the blocks of one tile form a cluster and add their
// partial tiles up through distributed shared memory (cluster_reduce_store): no workspace.
template <class Op, bool TMA_STORE, bool MULTICAST>
__global__ void __launch_bounds__(THREADS, 1)
    wgmma_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b,
                 const __grid_constant__ CUtensorMap map_c, Source a, Source b, int M, int N, int K,
                 const float* __restrict__ bias, float* __restrict__ C, Act act, int kt_per_split, bool store_c,
                 bool multicast) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    using T = typename Op::T;
    constexpr int BK = ROW_BYTES / sizeof(T);  // elements per k-tile
    constexpr int TM = tile_rows<Op>(), TN = tile_cols<Op>();
    constexpr int A_BYTES = TM * ROW_BYTES, B_BYTES = TN * ROW_BYTES;
    extern __shared__ unsigned char smem_raw[];
    // The 128-byte swizzle repeats every 1 KB: tiles must start 1 KB-aligned.
    unsigned char* smem = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);
    unsigned char* sA = smem;                                             // [STAGES][TM][BK]
    unsigned char* sB = smem + STAGES * A_BYTES;                          // [STAGES] B tile
    unsigned char* sC = sB + STAGES * B_BYTES;                            // TMA_STORE: [CONSUMERS][2] boxes
    uint64_t* full = reinterpret_cast<uint64_t*>(sC + (TMA_STORE ? STORE_BYTES : 0));  // copy engine -> consumers
    uint64_t* empty = full + STAGES;                                      // consumers -> producer

    // Work units: tiles, or with `multicast` (cuda.16) pairs of tiles taken by the two blocks of a
    // cluster (rank r: the pair's tile r): one above the other, sharing the pair's B tiles, or with
    // SWAP side by side, sharing A's (the larger: TM = 256 rows).
    // Grouped raster (as in 09): units running together share A and B panels in L2.
    const int pair = MULTICAST && multicast ? 2 : 1;
    const unsigned rank = pair == 2 ? cluster_rank() : 0;
    const UnitGrid grid = unit_grid<Op>(ceil_div(M, TM), ceil_div(N, TN), pair);
    const int rows_m = grid.rows, cols_n = grid.cols;
    const int units = rows_m * cols_n, first_unit = blockIdx.x / pair, unit_step = gridDim.x / pair;
    const auto origin = [&](int pid) {  // the first row and column of this block's tile of unit pid
        const int first_m = (pid / (GROUP_M * cols_n)) * GROUP_M;
        const int group_rows = min(rows_m - first_m, GROUP_M);
        const int tm = first_m + (pid % (GROUP_M * cols_n)) % group_rows;
        const int tn = (pid % (GROUP_M * cols_n)) / group_rows;
        if constexpr (Op::SWAP) return make_int2(tm * TM, (tn * pair + (int)rank) * TN);
        else return make_int2((tm * pair + (int)rank) * TM, tn * TN);
    };
    // A stage is free again once the consumers of every block it was delivered to are done with it.
    const auto release = [&](int stage) {
        mbar_arrive(&empty[stage]);
        if (pair == 2) mbar_arrive_remote(&empty[stage], rank ^ 1);
    };
    const int kt_begin = blockIdx.y * kt_per_split;
    const int k_tiles = min(ceil_div(K, BK) - kt_begin, kt_per_split);  // this block's share
    // Warp numbers read from lane 0, as CUTLASS does: ~1 % faster at K = 1,024 (NOTES.md, 2026-11-30 midnight).
    const int wg = __shfl_sync(0xffffffffu, threadIdx.x / 128, 0);
    const bool copies = a.chunk || b.chunk, split = gridDim.y > 1;
    const unsigned tma_bytes = (a.chunk ? 0 : A_BYTES) + (b.chunk ? 0 : B_BYTES);

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            // TMA: the producer's arrive.expect_tx (+ the bytes); cp.async: one arrive per producer thread.
            mbar_init(&full[s], (tma_bytes ? 1 : 0) + (copies ? 128 : 0));
            mbar_init(&empty[s], 4 * CONSUMERS * pair);  // one arrive per consumer warp (of both blocks)
        }
        mbar_init_fence();  // visible to the copy engine (and the cluster)
    }
    __syncthreads();
    if (pair == 2) {  // the peer's barriers are initialised before anything arrives on them
        cluster_arrive_release();
        cluster_wait_acquire();
    }

    if (wg == 0) {
        // Producer: keeps STAGES tiles in flight; one thread drives TMA, all 128 issue cp.async.
        // SWAP's consumers need more than the 168 registers a thread of 384 gets: the producer
        // gives its share away.
        if constexpr (Op::SWAP) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        // cp.async groups in flight before a stage is announced. The consumers release stage j
        // only once stage j + 1 is announced, and the producer waits for stage kt - STAGES to be
        // released before it refills it: more than STAGES - 2 would deadlock.
        constexpr int LAG = STAGES - 2;
        int it = 0;  // stages filled so far, over all of this block's tiles
        for (int unit = first_unit; unit < units; unit += unit_step) {
            const int m0 = origin(unit).x, n0 = origin(unit).y;
            for (int kt = 0; kt < k_tiles && (copies || threadIdx.x == 0); ++kt, ++it) {
                const int s = it % STAGES;
                if (it >= STAGES) mbar_wait(&empty[s], ((it / STAGES) - 1) & 1);  // consumers are done with it
                const int k0 = (kt_begin + kt) * BK;
                if (threadIdx.x == 0 && tma_bytes) {
                    mbar_expect_tx(&full[s], tma_bytes);  // whole boxes count, zero-filled parts included
                    if (!a.chunk) {
                        if (Op::SWAP && pair == 2)  // this block's half of A's TM rows, into both blocks
                            tma_load_2d_multicast(sA + s * A_BYTES + rank * (TM / 2) * ROW_BYTES, &map_a, k0,
                                                  m0 + (int)rank * (TM / 2), &full[s], 0b11);
                        else
                            tma_load_2d(sA + s * A_BYTES, &map_a, k0, m0, &full[s]);
                    }
                    if (!b.chunk) {
                        if constexpr (Op::B_K_MAJOR) {
                            if (pair == 2)  // this block's half of the TN rows, into both blocks
                                tma_load_2d_multicast(sB + s * B_BYTES + rank * (TN / 2) * ROW_BYTES, &map_b, k0,
                                                      n0 + (int)rank * (TN / 2), &full[s], 0b11);
                            else
                                tma_load_2d(sB + s * B_BYTES, &map_b, k0, n0, &full[s]);  // one TN x BK box
                        } else if constexpr (Op::B_ROW_GROUP > 1) {  // rows reordered, Op::map_b
                            Op::load_b(sB + s * B_BYTES, &map_b, n0, k0, &full[s]);
                        } else {
                            constexpr int box_n = BOX_N_BYTES / sizeof(T), boxes = TN / box_n;
                            if (pair == 2) {  // this block's half of the boxes, into both blocks
#pragma unroll
                                for (int j = rank * boxes / 2; j < (rank + 1) * boxes / 2; ++j)
                                    tma_load_2d_multicast(sB + s * B_BYTES + j * BK * BOX_N_BYTES, &map_b,
                                                          n0 + j * box_n, k0, &full[s], 0b11);
                            } else {
#pragma unroll
                                for (int j = 0; j < boxes; ++j)
                                    tma_load_2d(sB + s * B_BYTES + j * BK * BOX_N_BYTES, &map_b, n0 + j * box_n, k0,
                                                &full[s]);
                            }
                        }
                    }
                }
                if (copies) {
                    if (a.chunk) copy_tile<T, TM, BK, false>(a, smem_u32(sA + s * A_BYTES), m0, M, k0, K);
                    if (b.chunk) {
                        const unsigned dst = smem_u32(sB + s * B_BYTES);
                        if constexpr (Op::B_K_MAJOR) copy_tile<T, TN, BK, false>(b, dst, n0, N, k0, K);
                        else copy_tile<T, BK, TN, true, typename Op::BRows>(b, dst, k0, K, n0, N);
                    }
                    cp_async_commit();
                    if (it >= LAG) {
                        // Stage it - LAG has landed: hand it to wgmma (the async proxy) and announce it.
                        cp_async_wait<LAG>();
                        fence_proxy_async_shared();
                        mbar_arrive(&full[(it - LAG) % STAGES]);
                    }
                }
            }
        }
        if (copies) {
            cp_async_wait<0>();
            fence_proxy_async_shared();
            for (int j = max(0, it - LAG); j < it; ++j) mbar_arrive(&full[j % STAGES]);
        }
        __syncwarp();  // lane 0 may come from the TMA loop alone; .aligned barriers need whole warps
        if (split) cluster_reduce_barriers([] {});  // the reduction's cluster barriers count every thread
        if (pair == 2) {  // the peer may still deliver to this block or arrive on its barriers
            cluster_arrive_release();
            cluster_wait_acquire();
        }
        return;
    }

    // Consumers: warpgroup c multiplies rows [64c, 64c + 64) of the block tile (of C^T with SWAP).
    if constexpr (Op::SWAP) asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    const int c = wg - 1;
    float acc[128];
    const int lane = threadIdx.x % 32;
    const int warp = __shfl_sync(0xffffffffu, (threadIdx.x % 128) / 32, 0), g = lane / 4, t = lane % 4;
    // SWAP: wgmma's A is this warpgroup's 64 columns of B, transposed into registers (Op::Fragments).
    const unsigned b_base = smem_u32(sB);
    const typename Op::Fragments frags(c, warp, lane);
    unsigned frag0[ROW_BYTES / STEP_BYTES][4], frag1[ROW_BYTES / STEP_BYTES][4];  // SWAP: stages taken in turn
    int it = 0;  // stages consumed so far, over all of this block's tiles
    int stored = 0;  // TMA_STORE: slots of C this warpgroup handed to the copy engine (the next one's parity)
    for (int unit = first_unit; unit < units; unit += unit_step) {
        const int m0 = origin(unit).x, n0 = origin(unit).y;
#pragma unroll
        for (int i = 0; i < 128; ++i) acc[i] = 0.0f;
        for (int kt = 0; kt < k_tiles; ++kt, ++it) {
            const int s = it % STAGES;
            mbar_wait(&full[s], (it / STAGES) & 1);
            if constexpr (Op::SWAP) {
                // Two sets of fragments, taken in turn: stage it's are loaded while the batch of stage
                // it - 1 (the other set) may still be reading its registers.
                const auto batch = [&](unsigned (&frag)[ROW_BYTES / STEP_BYTES][4]) {
                    frags.load(frag, b_base + s * B_BYTES);
                    const unsigned a_tile = smem_u32(sA + s * A_BYTES);  // wgmma's B: all TM rows of A, K-major
                    wgmma_fence();  // the fragments are written before wgmma reads them
#pragma unroll
                    for (int kk = 0; kk < ROW_BYTES / STEP_BYTES; ++kk)
                        Op::mma(acc, frag[kk], smem_desc(a_tile + kk * STEP_BYTES, 16, 1024));
                    wgmma_commit();
                };
                if (it & 1) batch(frag1);
                else batch(frag0);
            } else {
                const unsigned a_tile = smem_u32(sA + s * A_BYTES + c * 64 * ROW_BYTES);
                const unsigned b_tile = smem_u32(sB + s * B_BYTES);
                wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < ROW_BYTES / STEP_BYTES; ++kk) {
                    // K-major (A, and B for tf32): k advances 32 bytes inside the swizzled rows,
                    // 1 KB between groups of 8 rows. N-major B: k advances whole 128-byte rows,
                    // BK x 128 bytes between the boxes along N.
                    const uint64_t desc_b = Op::B_K_MAJOR
                                                ? smem_desc(b_tile + kk * STEP_BYTES, 16, 1024)
                                                : smem_desc(b_tile + kk * (STEP_BYTES / sizeof(T)) * ROW_BYTES,
                                                            BK * BOX_N_BYTES, 1024);
                    Op::mma(acc, smem_desc(a_tile + kk * STEP_BYTES, 16, 1024), desc_b);
                }
                wgmma_commit();
            }
            wgmma_wait<1>();  // the batch of stage it-1 has finished reading shared memory (and SWAP's registers)
            if (kt > 0 && lane == 0) release((it - 1) % STAGES);
        }
        wgmma_wait<0>();
        if (lane == 0) release((it - 1) % STAGES);  // the tile's last stage

        // Epilogue straight from the accumulators. Warp w of the warpgroup holds
        // rows 16w..16w+15; per 8-column chunk j a lane holds rows g, g + 8 and
        // columns 2t, 2t + 1 (g = lane / 4, t = lane % 4), as in mma.sync's m16n8.
        if (split) {
            // Split-K: this block's partial tile goes into its shared memory (over the stages, free
            // once both consumer warpgroups are done with them), then each block of the cluster
            // adds up a share of the tile's rows from all of them.
            constexpr int PITCH = partial_pitch<Op>();
            float* part = reinterpret_cast<float*>(smem);
            fence_proxy_async_shared();              // wgmma's reads, then our writes
            named_barrier_sync(1, 128 * CONSUMERS);  // consumers only
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int i = c * 64 + Op::row_of(warp, g, h);  // a row of the tile (of C^T with SWAP)
#pragma unroll
                for (int j = 0; j < (Op::SWAP ? TM : TN) / 8; ++j) {
                    if (!Op::SWAP && 8 * j >= N - n0) break;  // only C's columns are reduced
                    if constexpr (Op::SWAP) {
                        part[(8 * j + 2 * t) * PITCH + i] = acc[4 * j + 2 * h];
                        part[(8 * j + 2 * t + 1) * PITCH + i] = acc[4 * j + 2 * h + 1];
                    } else {
                        *reinterpret_cast<float2*>(part + i * PITCH + 8 * j + 2 * t) =
                            make_float2(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
                    }
                }
            }
            cluster_reduce_store(part, TM, TN, PITCH, m0, n0, M, N, bias, act, C, threadIdx.x - 128, 128 * CONSUMERS);
            return;
        }
        if (TMA_STORE && store_c) {
            // cuda.15: through shared memory and the copy engine, a box at a time into one of two slots,
            // so the consumer goes on to the next tile while its last slots are written. A slot is reused
            // every other hand-over, counted over the tiles (`stored`): a tile may end on either slot.
            // With neither bias nor activation the values go as they are, from code of their own
            // (`with_plain`: ~40 instructions a box instead of ~270; at 4096^3 within the runs' spread, the
            // per-warp hand-over below is what bought time, NOTES.md, 2026-11-30, late night). The copy
            // engine writes only what lies inside C, so columns past N may hold anything.
            const auto value = [&](auto plain, float a, int col) {
                if constexpr (decltype(plain)::value) return a;
                else return col < N ? epilogue(a, bias, col, act) : 0.0f;
            };
            const auto with_plain = [&](auto body) {  // body(Plain), once the tile's choice is a constant
                if (bias == nullptr && act == Act::None) body(std::true_type{});
                else body(std::false_type{});
            };
            if constexpr (Op::SWAP) {
                // This warpgroup holds C's columns n0 + 64c .. + 63 of the tile's TM rows, warp w 16 of them:
                // warps 2b and 2b + 1 (`duo` b) store box b (32 rows x 32 columns) together, 32 rows at a
                // time, through two 4 KB slots of their own, meeting at a named barrier of their 64 threads,
                // 4 + 2c + duo (0 is __syncthreads, 1 split-K's consumers; the even warp's lane 0 hands each
                // box to the copy engine). Tf32Swap's lanes (g, t) write 8 consecutive columns of 4 rows
                // (2t + e), which the swizzle puts on 8 chunks; Fp8Swap's every other column (row_of), two
                // lanes to a bank.
                const int duo = warp / 2, cols0 = n0 + c * 64 + 32 * duo;
                const bool leader = warp % 2 == 0 && lane == 0;
#pragma unroll  // acc[] stays in registers only with constant indices
                for (int rr = 0; rr < TM / 32; ++rr) {
                    if (m0 + 32 * rr >= M || cols0 >= N) break;  // the same for both warps of the duo
                    unsigned char* const box = sC + (c * 2 + stored % 2) * STORE_BOX_BYTES + duo * (STORE_BOX_BYTES / 2);
                    if (leader) bulk_wait_read<1>();  // the slot's last store has read it
                    named_barrier_sync(4 + 2 * c + duo, 64);
                    with_plain([&](auto plain) {
#pragma unroll
                        for (int h = 0; h < 2; ++h) {
                            const int n = Op::row_of(warp, g, h), q = n % 32, col = n0 + c * 64 + n;  // in the box, in C
#pragma unroll
                            for (int jr = 0; jr < 4; ++jr)
#pragma unroll
                                for (int e = 0; e < 2; ++e) {
                                    const unsigned dense = (8 * jr + 2 * t + e) * ROW_BYTES + q * sizeof(float);
                                    *reinterpret_cast<float*>(box + (dense ^ (((dense >> 7) & 7) << 4))) =
                                        value(plain, acc[4 * (4 * rr + jr) + 2 * h + e], col);
                                }
                        }
                    });
                    fence_proxy_async_shared();  // our writes, then the copy engine's reads
                    named_barrier_sync(4 + 2 * c + duo, 64);
                    if (leader) {
                        tma_store_2d(&map_c, box, cols0, m0 + 32 * rr);
                        bulk_commit();
                    }
                    ++stored;
                }
                continue;
            }
            // Each warp stores its own 16 rows, 32 columns at a time, through two 2 KB slots of its own: only
            // the warp waits for its slot and hands it over (a warpgroup-wide hand-over stopped all four
            // warps at two barriers a box).
            const int rows0 = m0 + c * 64 + warp * WARP_BOX_ROWS;
            unsigned char* const slots = sC + c * 2 * STORE_BOX_BYTES + warp * 2 * WARP_BOX_BYTES;
#pragma unroll  // acc[] stays in registers only with constant indices
            for (int jj = 0; jj < TN / STORE_BOX_COLS; ++jj) {
                if (rows0 >= M || n0 + jj * STORE_BOX_COLS >= N) break;  // the same for the whole warp
                unsigned char* const box = slots + (stored % 2) * WARP_BOX_BYTES;
                if (lane == 0) bulk_wait_read<1>();  // the slot's last store has read it
                __syncwarp();
                // A float2 store is served a half-warp (rows g = 0-3 or 4-7) at a time. Were every lane to
                // write chunk q in turn, a half-warp would meet only 4 of a 128-byte row's 8 swizzled
                // 16-byte chunks (two wavefronts where one does); lanes of odd g write chunk q ^ 2 instead,
                // so that each half-warp covers all 32 banks once.
                const bool odd = g & 1;
                with_plain([&](auto plain) {
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        const int r = g + 8 * h;  // row in the box
#pragma unroll
                        for (int q0 = 0; q0 < STORE_BOX_COLS / 8; ++q0) {
                            const int q = odd ? q0 ^ 2 : q0;  // acc[] by constant indices: select, not index
                            const int ja = jj * (STORE_BOX_COLS / 8) + q0, jb = jj * (STORE_BOX_COLS / 8) + (q0 ^ 2);
                            const float a0 = odd ? acc[4 * jb + 2 * h] : acc[4 * ja + 2 * h];
                            const float a1 = odd ? acc[4 * jb + 2 * h + 1] : acc[4 * ja + 2 * h + 1];
                            const int col = n0 + 8 * (jj * (STORE_BOX_COLS / 8) + q) + 2 * t;
                            const unsigned dense = r * ROW_BYTES + (8 * q + 2 * t) * sizeof(float);
                            *reinterpret_cast<float2*>(box + (dense ^ (((dense >> 7) & 7) << 4))) =
                                make_float2(value(plain, a0, col), value(plain, a1, col + 1));
                        }
                    }
                });
                fence_proxy_async_shared();  // our writes, then the copy engine's reads
                __syncwarp();
                if (lane == 0) {
                    tma_store_2d(&map_c, box, n0 + jj * STORE_BOX_COLS, rows0);
                    bulk_commit();
                }
                ++stored;
            }
            continue;
        }
        if constexpr (Op::SWAP) {
            // Rows of C^T are columns of C: a lane stores C[m][n] for its two n, eight lanes
            // covering 8 consecutive n (a 32-byte sector) per row m.
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int col = n0 + c * 64 + Op::row_of(warp, g, h);
                if (col >= N) continue;
#pragma unroll
                for (int j = 0; j < TM / 8; ++j)
#pragma unroll
                    for (int e = 0; e < 2; ++e) {
                        const int row = m0 + 8 * j + 2 * t + e;
                        if (row < M) C[(size_t)row * N + col] = epilogue(acc[4 * j + 2 * h + e], bias, col, act);
                    }
            }
        } else {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = m0 + c * 64 + warp * 16 + g + 8 * h;
                if (row >= M) continue;
#pragma unroll
                for (int j = 0; j < TN / 8; ++j) {
                    const int col = n0 + 8 * j + 2 * t;
                    if (col < N)
                        store_pair(C + (size_t)row * N, col, N, acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1], bias, act);
                }
            }
        }
    }  // tiles
    // the last boxes are written (each warp's lane 0 issued them; SWAP: each even warp's)
    if (TMA_STORE && store_c && threadIdx.x % (Op::SWAP ? 64 : 32) == 0) bulk_wait<0>();
    if (pair == 2) {  // stay until the peer's copies into this block and arrivals on it are done
        cluster_arrive_release();
        cluster_wait_acquire();
    }
#endif
}

// dst[r * ld + c] = src[r * cols + c] (TRANSPOSE: dst[c * ld + r] = src[r * cols + c]): an
// operand copied where TMA can read it (16-byte aligned rows); 32x32 tiles through shared
// memory keep both sides coalesced when transposing.
template <class T, bool TRANSPOSE>
__global__ void relayout_kernel(const T* __restrict__ src, int rows, int cols, T* __restrict__ dst, int ld) {
    __shared__ T tile[32][33];
    const int r0 = blockIdx.y * 32, c0 = blockIdx.x * 32;
    for (int i = threadIdx.y; i < 32; i += blockDim.y) {
        const int r = r0 + i, c = c0 + threadIdx.x;
        if (r < rows && c < cols) {
            if (TRANSPOSE) tile[i][threadIdx.x] = src[(size_t)r * cols + c];
            else dst[(size_t)r * ld + c] = src[(size_t)r * cols + c];
        }
    }
    if (!TRANSPOSE) return;
    __syncthreads();
    for (int i = threadIdx.y; i < 32; i += blockDim.y) {
        const int c = c0 + i, r = r0 + threadIdx.x;  // dst row c, column r
        if (r < rows && c < cols) dst[(size_t)c * ld + r] = tile[threadIdx.x][i];
    }
}

// fp8's B^T (dst[c * ld + r] = src[r * cols + c] for bytes; rows, cols and ld multiples of 16): a
// 128 x 128-byte tile read 16 bytes a thread into shared memory; then each thread turns 16 rows x 4
// columns around with byte permutes and writes four 16-byte pieces, eight threads covering 128
// bytes of a row of dst. relayout_kernel moves one byte per thread each way.
__global__ void transpose_bytes_kernel(const uint4* __restrict__ src, int rows, int cols, uint4* __restrict__ dst,
                                       int ld) {
    __shared__ uint32_t tile[128][33];  // [row][word]; the pad spreads a column's words over the banks
    const int r0 = blockIdx.y * 128, c0 = blockIdx.x * 128;
    for (int i = threadIdx.x; i < 128 * 8; i += blockDim.x) {
        const int r = i / 8, q = i % 8;
        if (r0 + r < rows && c0 + 16 * q < cols) {
            const uint4 v = src[((size_t)(r0 + r) * cols + c0) / 16 + q];
            tile[r][4 * q] = v.x, tile[r][4 * q + 1] = v.y, tile[r][4 * q + 2] = v.z, tile[r][4 * q + 3] = v.w;
        }
    }
    __syncthreads();
    const int g = threadIdx.x % 8, w = threadIdx.x / 8;  // rows 16 g.. 16 g + 15, word w (columns 4 w..)
    if (r0 + 16 * g >= rows || c0 + 4 * w >= cols) return;
    uint32_t out[4][4];  // [column x][word j]: bytes of rows 16 g + 4 j .. + 3 in column 4 w + x
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const int r = 16 * g + 4 * j;
        const uint32_t ab01 = __byte_perm(tile[r][w], tile[r + 1][w], 0x5140);
        const uint32_t ab23 = __byte_perm(tile[r][w], tile[r + 1][w], 0x7362);
        const uint32_t ef01 = __byte_perm(tile[r + 2][w], tile[r + 3][w], 0x5140);
        const uint32_t ef23 = __byte_perm(tile[r + 2][w], tile[r + 3][w], 0x7362);
        out[0][j] = __byte_perm(ab01, ef01, 0x5410), out[1][j] = __byte_perm(ab01, ef01, 0x7632);
        out[2][j] = __byte_perm(ab23, ef23, 0x5410), out[3][j] = __byte_perm(ab23, ef23, 0x7632);
    }
#pragma unroll
    for (int x = 0; x < 4; ++x)
        dst[((size_t)(c0 + 4 * w + x) * ld + r0 + 16 * g) / 16] =
            make_uint4(out[x][0], out[x][1], out[x][2], out[x][3]);
}

// 1 when this binary's code for the running GPU has the wgmma path (sm_90a).
__global__ void probe_kernel(int* out) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    *out = 1;
#else
    *out = 0;
#endif
}

// "" when the Hopper rungs can run on the current device, else why not. Probed once.
std::string unavailable() {
    static const std::string reason = []() -> std::string {
        int count = 0;
        if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
            cudaGetLastError();
            return "no usable CUDA device";
        }
        const cudaDeviceProp& p = device_props();
        if (p.major != 9 || p.minor != 0)
            return "wgmma needs a Hopper GPU (compute capability 9.0); this is " + std::string(p.name) + " (" +
                   std::to_string(p.major) + "." + std::to_string(p.minor) + ")";
        DeviceBuffer flag;
        int host = 0;
        probe_kernel<<<1, 1>>>(static_cast<int*>(flag.reserve(sizeof(int))));
        cudaError_t err = cudaGetLastError();
        if (err == cudaSuccess) err = cudaMemcpy(&host, flag.ptr, sizeof(int), cudaMemcpyDeviceToHost);
        flag.release();
        CUDA_CHECK(err);
        return host == 1 ? "" : "this build has no sm_90a code (add 90a to CMAKE_CUDA_ARCHITECTURES)";
    }();
    return reason;
}

int round_up(int v, int m) { return ceil_div(v, m) * m; }

// Copies `src` [rows, cols] into `dst` with rows `ld` apart (transposed with TRANSPOSE).
template <class T, bool TRANSPOSE>
void relayout(const void* src, int rows, int cols, void* dst, int ld, cudaStream_t stream) {
    if constexpr (TRANSPOSE && sizeof(T) == 1) {
        if (rows % 16 == 0 && cols % 16 == 0 && ld % 16 == 0 && reinterpret_cast<uintptr_t>(src) % 16 == 0 &&
            reinterpret_cast<uintptr_t>(dst) % 16 == 0) {
            transpose_bytes_kernel<<<dim3(ceil_div(cols, 128), ceil_div(rows, 128)), 256, 0, stream>>>(
                static_cast<const uint4*>(src), rows, cols, static_cast<uint4*>(dst), ld);
            CUDA_CHECK_LAUNCH("cuda wgmma operand transpose (bytes)");
            return;
        }
    }
    const dim3 grid(ceil_div(cols, 32), ceil_div(rows, 32));
    relayout_kernel<T, TRANSPOSE><<<grid, dim3(32, 8), 0, stream>>>(static_cast<const T*>(src), rows, cols,
                                                                    static_cast<T*>(dst), ld);
    CUDA_CHECK_LAUNCH("cuda wgmma operand copy");
}

// Bytes per copy that an operand's rows allow: 16 when each row starts 16-byte aligned (TMA
// reads it in place), else 8 or 4 (cp.async reads it in place), else 2.
int row_alignment(const void* base, int row_elems, size_t elem_bytes) {
    for (int w : {16, 8, 4})
        if (reinterpret_cast<uintptr_t>(base) % w == 0 && row_elems * elem_bytes % w == 0) return w;
    return 2;
}

// The steps cuda.14-16 add to 10's kernel, each named, each on top of the one before (a rung's
// file names its step: hopper::launch<Fp16, TmaStore>).
struct Steps {  // 10-13, 18: a block per tile (split-K over a cluster where the tiles cannot fill the SMs)
    static constexpr bool persistent = false, tma_store = false, multicast = false;
};
struct Persistent : Steps {  // 14: min(tiles, SMs) blocks walk the tiles
    static constexpr bool persistent = true;
};
struct TmaStore : Persistent {  // 15: C leaves through shared memory by the copy engine
    static constexpr bool tma_store = true;
};
struct Multicast : TmaStore {  // 16: block pairs in a cluster share each B tile (A's when swapped; TMA multicast)
    static constexpr bool multicast = true;
};

// The kernel instance of Op and S, its shared-memory opt-in made (once per instance).
template <class Op, class S>
const void* ready_kernel() {
    constexpr auto kernel = wgmma_kernel<Op, S::tma_store, S::multicast>;
    static const bool set = [] {  // one host thread drives the GPU (common.cuh)
        CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes<S::tma_store>()));
        return true;
    }();
    (void)set;
    return reinterpret_cast<const void*>(kernel);
}

// How Op and S launch for problem p: where each operand is read from, the split and the grid,
// and, where a step of S cannot apply at p, why (`rejected`; the rung then raises Unavailable
// rather than run the rung before it).
struct Plan {
    bool copy_a = false, copy_b = false;  // first copied into the workspace with padded rows
    int chunk_a = 0, chunk_b = 0;  // cp.async's bytes per copy for each operand, 0 where TMA reads it
    int tiles = 0, k_tiles = 0, splits = 1, blocks = 0;
    bool multicast = false, store_c = false;
    std::string rejected;
};
template <class Op, class S>
Plan plan(const GemmProblem& p) {
    using T = typename Op::T;
    const void* kernel = ready_kernel<Op, S>();
    constexpr int smem = smem_bytes<S::tma_store>(), BK = ROW_BYTES / sizeof(T);
    Plan r;
    const int align_a = row_alignment(p.A, p.K, sizeof(T)), align_b = row_alignment(p.B, p.N, sizeof(T));
    r.copy_a = align_a == 2;
    r.copy_b = Op::B_K_MAJOR || align_b == 2;
    r.chunk_a = r.copy_a || align_a == 16 ? 0 : align_a;
    r.chunk_b = r.copy_b || align_b == 16 ? 0 : align_b;
    // Op::map_b takes whole groups of rows: where K is not a multiple, B's (16-byte aligned) rows come by cp.async
    if (Op::B_ROW_GROUP > 1 && p.K % Op::B_ROW_GROUP != 0 && r.chunk_b == 0) r.chunk_b = 8;
    r.tiles = ceil_div(p.M, tile_rows<Op>()) * ceil_div(p.N, tile_cols<Op>());
    r.k_tiles = ceil_div(p.K, BK);
    r.splits = cluster_splits(kernel, THREADS, smem, r.tiles, r.k_tiles, 1);
    r.blocks = r.tiles;
    const int sms = device_props().multiProcessorCount;
    if (S::persistent && (r.splits > 1 || r.tiles <= sms))  // a block per tile: 10's launch, split-K or not
        r.rejected = "its " + std::to_string(r.tiles) + " tiles do not outnumber the " + std::to_string(sms) +
                     " SMs: no tile for a persistent block to walk on to (10's launch, K split where it helps)";
    if (r.rejected.empty() && S::persistent) r.blocks = std::min(r.tiles, sms);
    if (r.rejected.empty() && S::tma_store && (p.N % 4 != 0 || reinterpret_cast<uintptr_t>(p.C) % 16 != 0))
        r.rejected = "the TMA store needs C's rows in 16-byte multiples, 16-byte aligned (N a multiple of 4)";
    r.store_c = S::tma_store && r.rejected.empty();
    if (r.rejected.empty() && S::multicast) {
        const int pair_clusters = resident_clusters(kernel, THREADS, smem, 2);
        if (r.chunk_a || r.chunk_b)
            r.rejected = "multicast needs both operands read by TMA; rows 4- or 8-byte aligned are read by "
                         "cp.async (K and N multiples of " + std::to_string(16 / sizeof(T)) + " are TMA's)";
        else if (pair_clusters == 0)
            r.rejected = "no cluster of two of its blocks fits on this GPU";
        else {
            const UnitGrid pairs = unit_grid<Op>(ceil_div(p.M, tile_rows<Op>()), ceil_div(p.N, tile_cols<Op>()), 2);
            r.blocks = 2 * std::min(pairs.rows * pairs.cols, pair_clusters);
        }
    }
    r.multicast = S::multicast && r.rejected.empty();
    return r;
}

// "" where Op with steps S runs problem p as its rung says (KernelInfo::rejects), else why not.
template <class Op, class S>
std::string rejects(const GemmProblem& p) {
    if (!unavailable().empty()) return "";  // KernelInfo::unavailable says it
    return plan<Op, S>(p).rejected;
}

// The rung's anatomy at p (kernel_anatomy): two consumer warpgroups of 64 rows each.
template <class Op, class S>
Anatomy anatomy(const GemmProblem& p) {
    const Plan r = plan<Op, S>(p);
    Anatomy a;
    a.kernel = ready_kernel<Op, S>();
    a.bm = tile_rows<Op>(), a.bn = tile_cols<Op>(), a.bk = ROW_BYTES / (int)sizeof(typename Op::T);
    a.wm = Op::SWAP ? tile_rows<Op>() : 64, a.wn = Op::SWAP ? 64 : tile_cols<Op>();  // a warpgroup's share
    a.block = dim3(THREADS);
    a.grid = dim3(r.blocks, r.splits);
    a.cluster = dim3(r.multicast ? 2 : 1, r.splits);
    a.dynamic_smem = smem_bytes<S::tma_store>();
    a.note = r.splits > 1 ? "split-K " + std::to_string(r.splits) + " ways over a cluster"
             : S::persistent ? "persistent: " + std::to_string(r.blocks) + " blocks walk " + std::to_string(r.tiles) + " tiles"
                             : std::to_string(r.tiles) + " tiles, a block each";
    return a;
}

// A rung's registry hooks (KernelInfo::rejects, its anatomy), one name for the macro's arguments.
template <class Op, class S>
struct Rung {
    static std::string rejects(const GemmProblem& p) { return hopper::rejects<Op, S>(p); }
    static Anatomy anatomy(const GemmProblem& p) { return hopper::anatomy<Op, S>(p); }
};

// Runs the kernel for operand type Op with steps S, in one launch where it can. TMA reads rows
// that start 16-byte aligned; rows aligned to 8 or 4 bytes are read by the producer warpgroup
// with cp.async instead; only 2-byte-aligned rows (an odd K or N in 16 bits) are first copied
// into the workspace with padded rows (never read: the maps keep the true sizes and TMA fills
// zeros past them). Tf32's B is always copied, transposed. Split-K when the tiles cannot fill
// the SMs: up to one wave of blocks, each with at least one k-tile, a tile's blocks in one
// cluster. Where a step of S cannot apply, Unavailable (plan()).
template <class Op, class S = Steps>
void launch(const GemmProblem& p, cudaStream_t stream, const char* name) {
    constexpr auto kernel = wgmma_kernel<Op, S::tma_store, S::multicast>;
    constexpr int smem = smem_bytes<S::tma_store>();
    using T = typename Op::T;
    if (p.in_type != Op::in_type) throw std::invalid_argument(std::string(name) + " expects " + Op::type_name + " operands");
    const std::string why = unavailable();
    if (!why.empty()) throw Unavailable(name, why);
    const Plan r = plan<Op, S>(p);
    if (!r.rejected.empty()) throw Unavailable(name, r.rejected);
    constexpr int per16 = 16 / sizeof(T), BK = ROW_BYTES / sizeof(T);
    const int lda = r.copy_a ? round_up(p.K, per16) : p.K;
    const int ldb = Op::B_K_MAJOR ? round_up(p.K, per16) : r.copy_b ? round_up(p.N, per16) : p.N;
    const size_t a_bytes = r.copy_a ? (size_t)p.M * lda * sizeof(T) : 0;
    const size_t a_pad = (a_bytes + 255) / 256 * 256;
    const size_t b_bytes = r.copy_b ? (size_t)(Op::B_K_MAJOR ? p.N : p.K) * ldb * sizeof(T) : 0;
    unsigned char* ws = a_bytes + b_bytes ? static_cast<unsigned char*>(workspace(a_pad + b_bytes)) : nullptr;
    Source a{p.A, lda, r.chunk_a};
    Source b{p.B, ldb, r.chunk_b};
    if (r.copy_a) {
        relayout<T, false>(p.A, p.M, p.K, ws, lda, stream);
        a.ptr = ws;
    }
    if (r.copy_b) {
        relayout<T, Op::B_K_MAJOR>(p.B, p.K, p.N, ws + a_pad, ldb, stream);
        b.ptr = ws + a_pad;
    }
    constexpr int TM = tile_rows<Op>(), TN = tile_cols<Op>();
    CUtensorMap map_a = {}, map_b = {};  // unused (never encoded) for an operand read by cp.async
    if (!a.chunk)
        map_a = tensor_map_2d(a.ptr, Op::tma_type, sizeof(T), p.M, p.K, r.multicast && Op::SWAP ? TM / 2 : TM, BK,
                              CU_TENSOR_MAP_SWIZZLE_128B,
                              std::string("A (") + Op::type_name + ")", lda);
    if (!b.chunk) {
        const std::string what = std::string(Op::B_K_MAJOR ? "B^T (" : "B (") + Op::type_name + ")";
        if constexpr (Op::B_ROW_GROUP > 1) map_b = Op::map_b(b.ptr, p.K, p.N, ldb, what);
        else if constexpr (Op::B_K_MAJOR)
            map_b = tensor_map_2d(b.ptr, Op::tma_type, sizeof(T), p.N, p.K, r.multicast ? TN / 2 : TN, BK,
                                  CU_TENSOR_MAP_SWIZZLE_128B, what, ldb);
        else
            map_b = tensor_map_2d(b.ptr, Op::tma_type, sizeof(T), p.K, p.N, BK, BOX_N_BYTES / sizeof(T),
                                  CU_TENSOR_MAP_SWIZZLE_128B, what, ldb);
    }
    CUtensorMap map_c = {};
    if (r.store_c)
        map_c = tensor_map_2d(p.C, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, sizeof(float), p.M, p.N, Op::SWAP ? 32 : WARP_BOX_ROWS,
                              STORE_BOX_COLS, CU_TENSOR_MAP_SWIZZLE_128B, "C (float32)", p.N);
    cudaLaunchAttribute attr[1];
    const cudaLaunchConfig_t cfg = make_launch_config(dim3(r.blocks, r.splits), dim3(THREADS), smem, stream,
                                                      dim3(r.multicast ? 2 : 1, r.splits), attr);
    CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, map_a, map_b, map_c, a, b, p.M, p.N, p.K, p.bias, p.C, p.act,
                                  ceil_div(r.k_tiles, r.splits), r.store_c, r.multicast));
    CUDA_CHECK_LAUNCH(name);
}

}  // namespace
}  // namespace gemmpad::cuda::hopper
