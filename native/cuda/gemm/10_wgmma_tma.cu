// cuda.10_wgmma_fp16: Hopper's own tensor-core path. wgmma (warpgroup MMA)
// fed by the TMA copy engine through an mbarrier pipeline, with one warpgroup
// that only loads and two that only multiply.
//
// What changed from 09 (mma.sync + ldmatrix + cp.async):
//  * wgmma.mma_async: a warpgroup (4 warps) issues one 64x256x16 product that
//    reads BOTH operands straight from shared memory through 64-bit matrix
//    descriptors; 09 first copied every fragment into registers with ldmatrix
//    and issued 32 small m16n8k16 products per warp and k step.
//  * TMA (cp.async.bulk.tensor): ONE thread asks the copy engine for a whole
//    tile (A: 128x64 halves, B: 64x256 in four 64x64 boxes), described by a
//    CUtensorMap made on the host. The engine zero-fills what lies outside the
//    matrix and writes the 128-byte swizzle that wgmma reads without bank
//    conflicts; 09 spent 256 threads x 6 cp.async per stage on that.
//  * Warp specialisation: warpgroup 0 produces (one thread issues the copies),
//    warpgroups 1 and 2 consume, each owning 64 rows of the 128x256 block tile.
//    They meet at two mbarriers per stage, `full` (the bytes have landed) and
//    `empty` (each consumer warp is done reading); 4 stages of 48 KB in flight.
//  * One wgmma batch stays in flight: a consumer issues stage k's products, then
//    waits only for stage k-1's and releases that stage.
// Why it should be faster: Hopper's tensor cores reach their full rate only
// through wgmma (09's mma.sync tops out at ~45 % of cuBLAS here), and the
// SM's issue slots no longer go to operand movement.
// What holds it back: compute capability 9.0 and an sm_90a build only (elsewhere the registry
// lists it as unavailable, with the reason); TMA needs K and N multiples of 8 (16-byte rows), so
// other shapes, the MLP's N = 100 and 10 among them, run 09's kernel.
// Measured: 4096^3 694,866 GFLOP/s = 88.4 % of cuBLAS fp16; 8192^3 668,796 GFLOP/s = 84.5 % of cuBLAS fp16
// (H200; assets/benchmarks/h200/bench-gemm.json, `gemmpad bench report`).
#include <cstdint>
#include <string>

#include "../common.cuh"

namespace gemmpad::cuda {
namespace {

constexpr int BM = 128, BN = 256, BK = 64;  // block tile; BK halves = 128 bytes = one swizzled row
constexpr int STAGES = 4;
constexpr int CONSUMERS = 2;                    // warpgroups that multiply (64 rows each)
constexpr int THREADS = 128 * (1 + CONSUMERS);  // + the producer warpgroup
constexpr int BOX_N = 64;                       // B is loaded as BN / BOX_N boxes of BK x 64
constexpr int A_BYTES = BM * BK * 2;            // 16 KB
constexpr int B_BYTES = BK * BN * 2;            // 32 KB
constexpr int STAGE_BYTES = A_BYTES + B_BYTES;
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + 2 * STAGES * 8 + 1024;  // + barriers + alignment slack
static_assert(BM == 64 * CONSUMERS, "each consumer warpgroup owns 64 rows");

// The device code below exists only in the sm_90a pass of the compiler (wgmma
// is an sm_90a instruction); other passes compile an empty kernel that the
// host never launches (see unavailable()).
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
constexpr int B_BOX_BYTES = BK * BOX_N * 2;  // 8 KB
constexpr int GROUP_M = 8;                   // tile-rows per raster group

// ---- wgmma
// B is row-major [K, N] (the registry's contract), i.e. "N-major" for wgmma:
// the descriptor's transpose bit for B is set (allowed for 16-bit types) and
// its shared-memory layout is the MN-major canonical one: 64-column boxes of
// 128-byte rows, LBO = 8 KB between boxes along N, SBO = 1 KB between groups
// of 8 k-rows. A is K-major: SBO = 1 KB between groups of 8 rows.
// Shared-memory matrix descriptor: start address, leading and stride byte
// offsets (all in 16-byte units), 128-byte swizzle (layout type 1, bits 62-63).
__device__ __forceinline__ uint64_t smem_desc(unsigned addr, unsigned lbo_bytes, unsigned sbo_bytes) {
    return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)(lbo_bytes >> 4) << 16) |
           ((uint64_t)(sbo_bytes >> 4) << 32) | (1ull << 62);
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// D[64x256] += A[64x16] (K-major, from shared memory) * B[16x256] (N-major: row-major B,
// hence imm-trans-b = 1), fp16 in, fp32 accumulate. 128 accumulators per thread.
__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], uint64_t desc_a, uint64_t desc_b,
                                                 int accumulate) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %130, 0;\n"  // scale-d: 0 ignores the old D (D = A*B), 1 accumulates
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16\n"
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
        "%128, %129, p, 1, 1, 0, 1;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(desc_a), "l"(desc_b), "r"(accumulate));
}
#endif

// C[M, N] = act(A[M, K] @ B[K, N] + bias), fp16 operands through the two tensor maps.
__global__ void __launch_bounds__(THREADS, 1)
    wgmma_kernel(const __grid_constant__ CUtensorMap map_a, const __grid_constant__ CUtensorMap map_b, int M, int N,
                 int K, const float* __restrict__ bias, float* __restrict__ C, Act act) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    extern __shared__ unsigned char smem_raw[];
    // The 128-byte swizzle repeats every 1 KB: tiles must start 1 KB-aligned.
    unsigned char* smem = smem_raw + ((1024 - (smem_u32(smem_raw) & 1023)) & 1023);
    unsigned char* sA = smem;                                           // [STAGES][BM][BK]
    unsigned char* sB = smem + STAGES * A_BYTES;                        // [STAGES][BN/BOX_N][BK][BOX_N]
    uint64_t* full = reinterpret_cast<uint64_t*>(sB + STAGES * B_BYTES);  // copy engine -> consumers
    uint64_t* empty = full + STAGES;                                      // consumers -> producer

    // Grouped raster (as in 09): blocks running together share A and B panels in L2.
    const int tiles_m = ceil_div(M, BM), tiles_n = ceil_div(N, BN);
    const int pid = blockIdx.x;
    const int first_m = (pid / (GROUP_M * tiles_n)) * GROUP_M;
    const int group_rows = min(tiles_m - first_m, GROUP_M);
    const int tm = first_m + (pid % (GROUP_M * tiles_n)) % group_rows;
    const int tn = (pid % (GROUP_M * tiles_n)) / group_rows;
    const int m0 = tm * BM, n0 = tn * BN;
    const int k_tiles = ceil_div(K, BK);
    const int wg = threadIdx.x / 128;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);               // the producer's arrive.expect_tx (+ the bytes)
            mbar_init(&empty[s], 4 * CONSUMERS);  // one arrive per consumer warp
        }
        mbar_init_fence();  // visible to the copy engine
    }
    __syncthreads();

    if (wg == 0) {
        // Producer: one thread keeps STAGES tiles in flight.
        if (threadIdx.x == 0) {
            for (int kt = 0; kt < k_tiles; ++kt) {
                const int s = kt % STAGES;
                if (kt >= STAGES) mbar_wait(&empty[s], ((kt / STAGES) - 1) & 1);  // consumers are done with it
                mbar_expect_tx(&full[s], STAGE_BYTES);  // whole boxes count, zero-filled parts included
                tma_load_2d(sA + s * A_BYTES, &map_a, kt * BK, m0, &full[s]);
#pragma unroll
                for (int j = 0; j < BN / BOX_N; ++j)
                    tma_load_2d(sB + s * B_BYTES + j * B_BOX_BYTES, &map_b, n0 + j * BOX_N, kt * BK, &full[s]);
            }
        }
        return;
    }

    // Consumers: warpgroup c multiplies rows [64c, 64c + 64) of the block tile.
    const int c = wg - 1;
    float acc[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) acc[i] = 0.0f;
    const int lane = threadIdx.x % 32;
    for (int kt = 0; kt < k_tiles; ++kt) {
        const int s = kt % STAGES;
        mbar_wait(&full[s], (kt / STAGES) & 1);
        const unsigned a_tile = smem_u32(sA + s * A_BYTES + c * 64 * BK * 2);
        const unsigned b_tile = smem_u32(sB + s * B_BYTES);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
            // A: k advances 16 halves = 32 bytes inside the swizzled row; B: 16 rows of 128 bytes.
            wgmma_m64n256k16(acc, smem_desc(a_tile + kk * 32, 16, 1024),
                             smem_desc(b_tile + kk * 16 * 128, B_BOX_BYTES, 1024), 1);
        }
        wgmma_commit();
        wgmma_wait<1>();  // the batch of stage kt-1 has finished reading shared memory
        if (kt > 0 && lane == 0) mbar_arrive(&empty[(kt - 1) % STAGES]);
    }
    wgmma_wait<0>();

    // Epilogue straight from the accumulators. Warp w of the warpgroup holds
    // rows 16w..16w+15; per 8-column chunk j a lane holds rows g, g + 8 and
    // columns 2t, 2t + 1 (g = lane / 4, t = lane % 4), as in mma.sync's m16n8.
    const int warp = (threadIdx.x % 128) / 32, g = lane / 4, t = lane % 4;
    const bool pair_ok = (N % 2) == 0;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int row = m0 + c * 64 + warp * 16 + g + 8 * h;
        if (row >= M) continue;
        float* dst = C + (size_t)row * N;
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
            const int col = n0 + 8 * j + 2 * t;
            if (col >= N) continue;
            const float v0 = epilogue(acc[4 * j + 2 * h], bias, col, act);
            if (col + 1 < N) {
                const float v1 = epilogue(acc[4 * j + 2 * h + 1], bias, col + 1, act);
                if (pair_ok) {
                    *reinterpret_cast<float2*>(dst + col) = make_float2(v0, v1);
                } else {
                    dst[col] = v0;
                    dst[col + 1] = v1;
                }
            } else {
                dst[col] = v0;
            }
        }
    }
#endif
}

// 1 when this binary's code for the running GPU has the wgmma path (sm_90a).
__global__ void probe_kernel(int* out) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    *out = 1;
#else
    *out = 0;
#endif
}

// "" when cuda.10 can run on the current device, else why not. Probed once.
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
        int* flag = nullptr;
        int host = 0;
        CUDA_CHECK(cudaMalloc(&flag, sizeof(int)));
        probe_kernel<<<1, 1>>>(flag);
        cudaError_t err = cudaGetLastError();
        if (err == cudaSuccess) err = cudaMemcpy(&host, flag, sizeof(int), cudaMemcpyDeviceToHost);
        cudaFree(flag);
        CUDA_CHECK(err);
        return host == 1 ? "" : "this build has no sm_90a code (add 90a to CMAKE_CUDA_ARCHITECTURES)";
    }();
    return reason;
}

void launch(const GemmProblem& p, cudaStream_t stream) {
    constexpr const char* name = "cuda.10_wgmma_fp16";
    if (p.in_type != InType::F16) throw std::invalid_argument(std::string(name) + " expects float16 operands");
    const std::string why = unavailable();
    if (!why.empty()) throw std::invalid_argument(std::string(name) + " cannot run here: " + why);
    // TMA: 16-byte aligned base and row strides. Otherwise 09 takes the problem (see the header).
    const bool tma_ok = p.K % 8 == 0 && p.N % 8 == 0 && reinterpret_cast<uintptr_t>(p.A) % 16 == 0 &&
                        reinterpret_cast<uintptr_t>(p.B) % 16 == 0;
    if (!tma_ok) return CudaRegistry::instance().get("cuda.09_mma_fp16").launch(p, stream);

    static bool attribute_set = false;  // one host thread drives the GPU (common.cuh)
    if (!attribute_set) {
        CUDA_CHECK(cudaFuncSetAttribute(wgmma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES));
        attribute_set = true;
    }
    // boxes of 64 halves = 128 bytes = one swizzled row
    const CUtensorMap map_a = tensor_map_2d(p.A, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, sizeof(__half), p.M, p.K, BM, BK,
                                            CU_TENSOR_MAP_SWIZZLE_128B, "A (fp16)");
    const CUtensorMap map_b = tensor_map_2d(p.B, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, sizeof(__half), p.K, p.N, BK, BOX_N,
                                            CU_TENSOR_MAP_SWIZZLE_128B, "B (fp16)");
    const int blocks = ceil_div(p.M, BM) * ceil_div(p.N, BN);
    wgmma_kernel<<<blocks, THREADS, SMEM_BYTES, stream>>>(map_a, map_b, p.M, p.N, p.K, p.bias, p.C, p.act);
    CUDA_CHECK_LAUNCH(name);
}

}  // namespace
}  // namespace gemmpad::cuda

GEMMPAD_REGISTER_CUDA_IF("cuda.10_wgmma_fp16", "fp16", gemmpad::InType::F16,
                         "Hopper wgmma 64x256x16 from shared memory, TMA loads, 4-stage mbarrier pipeline, "
                         "producer/consumer warpgroups",
                         gemmpad::cuda::launch, gemmpad::cuda::unavailable);
