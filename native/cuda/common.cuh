// Shared plumbing for every CUDA kernel: error checking that becomes a Python
// exception (never an abort), the kernel registry, device properties and a
// reusable workspace. Kernel files include this and nothing from pybind11
// (nvcc compiles pybind11 slowly; bindings live in .cpp files).
#pragma once

#include <cuda.h>  // CUtensorMap and its enums (types only)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "gemmpad/kernel.h"

namespace gemmpad::cuda {

// A failed CUDA call. `what()` names the call and CUDA's own error string.
class CudaError : public std::runtime_error {
  public:
    CudaError(cudaError_t code, const std::string& msg) : std::runtime_error(msg), code_(code) {}
    cudaError_t code() const { return code_; }
    bool out_of_memory() const { return code_ == cudaErrorMemoryAllocation; }

  private:
    cudaError_t code_;
};

// Throws CudaError naming `call` when `err` is not cudaSuccess.
void check(cudaError_t err, const char* call, const char* file, int line);

// After a kernel launch: catches bad launch configurations and, with
// GEMMPAD_SYNC_CHECK=1 in the environment, faults inside the kernel too.
void check_launch(const char* kernel_name, const char* file, int line);

using Launch = std::function<void(const GemmProblem&, cudaStream_t)>;
using CudaRegistry = Registry<Launch>;

// What a rung launches for one problem, as its anatomy hook says (the lab view's "why is this
// rung fast"): the exact __global__ instance and its launch shape. kernel_anatomy() reads the
// rest (registers, static shared memory, occupancy) from the compiled kernel.
struct Anatomy {
    const void* kernel = nullptr;     // the template instance the launch would use at this shape
    int bm = 0, bn = 0, bk = 0;       // block tile: rows and columns of C, k per step (0: no k tiles)
    int wm = 0, wn = 0;               // a warp's (warpgroup's, for wgmma) tile of C; 0: none
    int tm = 0, tn = 0;               // outputs a thread accumulates; 0: not meaningful (tensor cores)
    dim3 block, grid, cluster{1, 1, 1};
    size_t dynamic_smem = 0;          // bytes per block
    std::string note;                 // a word on the launch ("split-K 4 ways", "persistent")
};
using AnatomyFn = Anatomy (*)(const GemmProblem&);
// The anatomy hooks by kernel name (GEMMPAD_REGISTER_CUDA_RUNG fills it).
std::map<std::string, AnatomyFn>& anatomy_hooks();
// A rung's anatomy at problem p as a flat string/number map: the hook's fields plus the compiled
// kernel's registers per thread, static shared memory, its demangled name, blocks resident per
// SM (cudaOccupancyMaxActiveBlocksPerMultiprocessor) and occupancy (resident warps / the SM's
// maximum). Throws Unavailable where the kernel has no hook or cannot run.
std::map<std::string, std::string> kernel_anatomy(const std::string& name, const GemmProblem& p);

// The rung the last dispatcher launch ran (cuda.auto_*), "" before any. One host thread drives
// the GPU in gemmpad (as workspace()).
std::string& last_dispatched();

// Properties of the current device, read once.
const cudaDeviceProp& device_props();

// The architectures this module was compiled for, as CMake was given them
// ("80-real,86-real,89-real,90a-real,90-virtual"; native/CMakeLists.txt), for `gemmpad info`.
std::string build_arch_list();

// Largest dynamic shared memory a block may opt into on this device
// (99 KB on consumer Ampere/Ada, 227 KB on Hopper). Kernels size their
// tiles against this instead of assuming Hopper.
size_t max_smem_per_block_optin();
// Throws std::runtime_error("<what> needs N bytes of shared memory per block; this device
// allows M") when `bytes` exceeds max_smem_per_block_optin().
void require_smem(size_t bytes, const std::string& what);
// A 2-D TMA tensor map over a row-major [rows, cols] matrix of `type` (`elem_bytes`
// each) whose rows lie `ld` elements apart (0: cols), read in boxes of box_rows x
// box_cols; no interleave, zeros past the edges. cuTensorMapEncodeTiled comes from the
// driver at run time (no link against libcuda).
CUtensorMap tensor_map_2d(const void* base, CUtensorMapDataType type, size_t elem_bytes, uint64_t rows, uint64_t cols,
                          uint32_t box_rows, uint32_t box_cols, CUtensorMapSwizzle swizzle, const std::string& what,
                          uint64_t ld = 0);

// A device scratch buffer that only grows (split-K partial sums and the like).
// Not thread-safe: one host thread drives the GPU in gemmpad.
void* workspace(size_t bytes);

// Bytes per operand element of `t`.
inline constexpr size_t in_bytes(InType t) { return t == InType::F32 ? sizeof(float) : t == InType::F8E4M3 ? 1 : 2; }

// Elementwise float32 -> `to` conversion on the device (round to nearest even; fp8 saturates
// past +-448), into n elements of that type at dst (a plain copy for F32).
void cast_f32(const float* src, void* dst, size_t n, InType to, cudaStream_t stream);

// Fill n elements of type `t` with uniform values in [lo, hi) from a counter-based hash;
// used by the benchmarks so timings never run on zeros.
void fill_uniform(void* dst, InType t, size_t n, unsigned seed, float lo, float hi, cudaStream_t stream);

// a / b rounded up (b > 0). For a > 0 without forming a + b - 1, which wraps for a near 2^31
// (a (2^31 - 1) x 1 GEMM); a <= 0 keeps the old formula, so no caller sees another value.
inline constexpr int ceil_div(int a, int b) { return a > 0 ? (a - 1) / b + 1 : (a + b - 1) / b; }

// Whether an fp32 GEMM may move A, B and C as float4 (06, 07, 19): every row a whole number of
// float4s (K and N multiples of 4) and every matrix 16-byte aligned, so no float4 straddles a row.
inline bool float4_rows(const GemmProblem& p) {
    const auto at16 = [](const void* q) { return reinterpret_cast<uintptr_t>(q) % 16 == 0; };
    return p.K % 4 == 0 && p.N % 4 == 0 && at16(p.A) && at16(p.B) && at16(p.C);
}

// How many clusters of `size` (2..8) blocks of `kernel` (`threads` threads, `smem` bytes of
// dynamic shared memory, its attribute already set) can be resident at once; 0 where none can
// (no clusters before sm_90). The device is queried once per kernel.
int resident_clusters(const void* kernel, int threads, size_t smem, int size);

// Split-K over thread-block clusters (the slices of one output tile form a cluster and add up
// through distributed shared memory, cluster_reduce_store): how many slices for `tiles` tiles of
// k_tiles k-tiles each. As many as fill blocks_per_sm blocks on every SM, at most 8 (the
// portable cluster size), each slice at least one k-tile and none empty, and every cluster
// resident at once (on Hopper a GPC's SMs take whole clusters only: a cluster that waits for a
// second wave doubles the time). 1: no split (the tiles fill the SMs, or no clusters before
// sm_90). `kernel`, `threads`, `smem` as for resident_clusters.
int cluster_splits(const void* kernel, int threads, size_t smem, int tiles, int k_tiles, int blocks_per_sm);

// Split-K's second step: C = act(sum of the S partial [M, N] slices at ws + bias), the
// slices added in order (deterministic).
void splitk_reduce(int M, int N, int S, const float* ws, const float* bias, float* C, Act act, cudaStream_t stream);

// ReLU that keeps NaN a NaN, as NumPy's maximum(x, 0) does.
__device__ __forceinline__ float relu(float v) { return v > 0.0f ? v : (v != v ? v : 0.0f); }

// The fused MLP-layer epilogue every kernel applies at its store: bias add, then ReLU.
__device__ __forceinline__ float epilogue(float acc, const float* __restrict__ bias, int col, Act act) {
    if (bias) acc += bias[col];
    if (act == Act::Relu) acc = relu(acc);
    return acc;
}

// Stores the pair of an m16n8 accumulator fragment, row[col] and row[col + 1] of a C with N columns
// (the second only where col + 1 < N; callers skip col >= N), the epilogue applied where `apply`
// (split-K's partial sums go without): one float2 where N is even and so the pair 8-byte aligned,
// else two floats.
__device__ __forceinline__ void store_pair(float* __restrict__ row, int col, int N, float v0, float v1,
                                           const float* __restrict__ bias, Act act, bool apply = true) {
    const bool two = col + 1 < N;
    if (apply) {
        v0 = epilogue(v0, bias, col, act);
        if (two) v1 = epilogue(v1, bias, col + 1, act);
    }
    if (two && N % 2 == 0) {
        *reinterpret_cast<float2*>(row + col) = make_float2(v0, v1);
    } else {
        row[col] = v0;
        if (two) row[col + 1] = v1;
    }
}

// D = A(16x8, row) * B(8x8, col) + D: one tensor-core product, tf32 inputs (fp32
// bit patterns whose low 13 mantissa bits the hardware ignores), fp32 accumulators.
__device__ __forceinline__ void mma_m16n8k8_tf32(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

#ifdef __CUDACC__  // device helpers below: .cu files only (bindings include this header too)
// D = A(16x16, row) * B(16x8, col) + D: one tensor-core product of 16-bit inputs (T: __half or
// __nv_bfloat16), fp32 accumulators.
template <class T>
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    if constexpr (std::is_same_v<T, __nv_bfloat16>)
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    else
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// float32 bits -> tf32 (round to nearest, ties away), as cuBLAS's tf32 mode does.
__device__ __forceinline__ unsigned to_tf32(unsigned bits) {
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(__uint_as_float(bits)));
    return r;
}

// A shared-memory address as the 32-bit offset PTX's shared-state-space operands take.
__device__ __forceinline__ unsigned smem_u32(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// ---- cp.async (sm_80): 16 bytes global -> shared without a register; src_bytes = 0
// writes 16 zero bytes instead (an out-of-range chunk). Groups of copies are
// committed, then waited for until at most N groups are still in flight.
__device__ __forceinline__ void cp_async16(void* dst, const void* src, int src_bytes = 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(dst)), "l"(src), "r"(src_bytes));
}
// The same for a W-byte chunk (4 or 8: through L1; 16: as cp_async16) at shared address `dst`,
// for operands whose rows are only 4- or 8-byte aligned; the bytes past src_bytes are zeros.
template <int W>
__device__ __forceinline__ void cp_async_zfill(unsigned dst, const void* src, int src_bytes) {
    static_assert(W == 4 || W == 8 || W == 16, "cp.async copies 4, 8 or 16 bytes");
    if constexpr (W == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(dst), "l"(src), "n"(W), "r"(src_bytes));
}
// Orders this thread's completed shared-memory writes (cp.async, st.shared: the generic
// proxy) before later reads by the async proxy (wgmma's operands, TMA stores) of any thread
// that synchronises with it afterwards.
__device__ __forceinline__ void fence_proxy_async_shared() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Four 8x8 b16 matrices from shared memory (lanes 8j..8j+7 give the row
// addresses of matrix j, 16-byte aligned); .trans transposes each. Read as
// fp32, each matrix is 8 rows x 4 floats: the A fragment of a tf32 m16n8k8.
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(p)));
}

// ---- sm_90 mbarriers: shared-memory barriers that also count the bytes the
// SM's copy engine delivers (cp.async.bulk, TMA). On older architectures these
// compile to nothing; callers check the device before taking such a path.
__device__ __forceinline__ void mbar_init(uint64_t* bar, unsigned count) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(count));
#endif
}
// After a block's mbar_init()s, before any copy may signal them.
__device__ __forceinline__ void mbar_init_fence() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}
// One arrival that also announces `bytes` still to come from copies.
__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, unsigned bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_u32(bar)), "r"(bytes)
                 : "memory");
#endif
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_u32(bar)) : "memory");
#endif
}
// Returns once the phase with this parity has completed. kCluster: acquire at cluster
// scope, for data other blocks of the cluster wrote into this block (st.async).
template <bool kCluster = false>
__device__ __forceinline__ void mbar_wait(uint64_t* bar, unsigned parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if constexpr (kCluster) {
        asm volatile(
            "{\n"
            ".reg .pred done;\n"
            "WAIT_%=:\n"
            "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [%0], %1;\n"
            "@!done bra WAIT_%=;\n"
            "}\n" ::"r"(smem_u32(bar)),
            "r"(parity)
            : "memory");
    } else {
        asm volatile(
            "{\n"
            ".reg .pred done;\n"
            "WAIT_%=:\n"
            "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
            "@!done bra WAIT_%=;\n"
            "}\n" ::"r"(smem_u32(bar)),
            "r"(parity)
            : "memory");
    }
#endif
}
// `bytes` (a multiple of 16, both addresses 16-byte aligned) from global to
// shared memory by the copy engine; completion counted on `bar`.
__device__ __forceinline__ void bulk_copy(void* smem_dst, const void* gmem_src, unsigned bytes, uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                     smem_u32(smem_dst)),
                 "l"(gmem_src), "r"(bytes), "r"(smem_u32(bar))
                 : "memory");
#endif
}
// bulk_copy into the same shared-memory offset of every block of the cluster in `mask`
// (bit r: rank r), counted on the mbarrier at `bar`'s offset in each of them: one L2
// read, several deliveries. Their mbarriers must be initialised first (a cluster barrier).
__device__ __forceinline__ void bulk_copy_multicast(void* smem_dst, const void* gmem_src, unsigned bytes, uint64_t* bar,
                                                    uint16_t mask) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1], %2, [%3], %4;\n" ::"r"(
            smem_u32(smem_dst)),
        "l"(gmem_src), "r"(bytes), "r"(smem_u32(bar)), "h"(mask)
        : "memory");
#endif
}
// One arrival on the mbarrier at `bar`'s offset in block `rank` of the cluster. Release at CTA
// scope, as CUTLASS's cluster barriers arrive: at cluster scope it becomes a memory barrier that
// waits for all of the thread's outstanding accesses (cuda.16 ran at 59 % of its speed so).
__device__ __forceinline__ void mbar_arrive_remote(uint64_t* bar, unsigned rank);
// tma_load_2d into the same shared-memory offset of every block of the cluster in `mask` (bit
// r: rank r), counted on the mbarrier at `bar`'s offset in each: one L2 read, several deliveries.
__device__ __forceinline__ void tma_load_2d_multicast(void* dst, const CUtensorMap* map, int c_inner, int c_outer,
                                                      uint64_t* bar, uint16_t mask) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(
            smem_u32(dst)),
        "l"(map), "r"(c_inner), "r"(c_outer), "r"(smem_u32(bar)), "h"(mask)
        : "memory");
#endif
}
// One 2-D box of a TMA tensor map (tensor_map_2d) into shared memory (128-byte aligned),
// at column c_inner, row c_outer; completion counted on `bar`.
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, int c_inner, int c_outer, uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
            smem_u32(dst)),
        "l"(map), "r"(c_inner), "r"(c_outer), "r"(smem_u32(bar))
        : "memory");
#endif
}
// Thread-block cluster barrier (sm_90), split into arrive and wait so that a
// block can signal and go on (or exit) without waiting. Every thread of the
// cluster arrives once per phase; .aligned: whole warps execute it together. The relaxed
// arrival publishes nothing, and so does not wait (as the release one does, MEMBAR.GPU in SASS)
// for the thread's global stores: enough where a block only waits for the others to be done
// reading its shared memory before it exits.
__device__ __forceinline__ void cluster_arrive_relaxed() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void cluster_arrive_release() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void cluster_wait_acquire() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#endif
}

// The shared::cluster address (32-bit) of `p` (this block's shared memory) in block `rank`.
__device__ __forceinline__ unsigned cluster_map_u32(const void* p, unsigned rank) {
    unsigned out = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(out) : "r"(smem_u32(p)), "r"(rank));
#endif
    return out;
}
// A 2-D box of shared memory (laid out as the tensor map's box, swizzle included) stored to the
// global tensor at column c_inner, row c_outer by the copy engine; parts past the tensor's edges
// are not written. Committed as one bulk group; bulk_wait_read<N> returns once at most N of this
// thread's groups still read shared memory, bulk_wait<N> once at most N are still writing.
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, const void* src, int c_inner, int c_outer) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(map),
                 "r"(c_inner), "r"(c_outer), "r"(smem_u32(src))
                 : "memory");
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
#endif
}
template <int N>
__device__ __forceinline__ void bulk_wait_read() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
#endif
}
template <int N>
__device__ __forceinline__ void bulk_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}
// Named barrier `id` (1..15; 0 is __syncthreads) for `count` threads (whole warps).
__device__ __forceinline__ void named_barrier_sync(int id, int count) {
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

// This block's rank in its cluster, and the cluster's size in blocks.
__device__ __forceinline__ unsigned cluster_rank() {
    unsigned r = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
#endif
    return r;
}
__device__ __forceinline__ unsigned cluster_size() {
    unsigned n = 1;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(n));
#endif
    return n;
}
__device__ __forceinline__ void mbar_arrive_remote(uint64_t* bar, unsigned rank) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(cluster_map_u32(bar, rank)) : "memory");
#endif
}
// Four floats (16-byte aligned) from a block's shared memory, at a cluster_map_u32 address. No
// memory clobber: a thread issues several before it needs the first (the cluster barrier before
// them orders them after the writes they read).
__device__ __forceinline__ float4 ld_cluster_v4(unsigned addr) {
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "r"(addr));
#endif
    return v;
}

// Split-K's reduction inside a thread-block cluster, through distributed shared memory: every
// block of the cluster holds its partial sums of one [rows, cols] tile of C (row pitch `pitch`
// floats, cols and pitch multiples of 4) at `tile` in its own shared memory; block `rank` of S
// (at most 8) adds rows [rank * rows / S, ...) of all S tiles in rank order (the same sum
// whatever ran first), applies bias and act, and stores them at C[m0 + r][n0 + c]. `nthreads`
// threads of the block take part (tid: 0..nthreads-1). Only the tile's part inside C is read.
// cluster_reduce_store puts it between two cluster barriers (cluster_reduce_barriers). A remote
// load is slow (NOTES.md): a thread keeps BATCH items' loads in flight, BATCH * MAX_S = 16, and
// reads its own block's tile directly.
template <int MAX_S, int BATCH>
__device__ __forceinline__ void cluster_reduce_rows(const float* tile, int rows, int cols, int pitch, int m0, int n0,
                                                    int M, int N, const float* __restrict__ bias, Act act,
                                                    float* __restrict__ C, int tid, int nthreads) {
    const int S = (int)cluster_size(), rank = (int)cluster_rank();
    const int per = ceil_div(rows, S), r_begin = rank * per, r_end = min(min(rows, r_begin + per), M - m0);
    const int quads = ceil_div(min(cols, N - n0), 4), items = max(0, r_end - r_begin) * quads;
    const bool vec_store = N % 4 == 0 && (reinterpret_cast<uintptr_t>(C) & 15) == 0;
    unsigned base[MAX_S];
#pragma unroll
    for (int p = 0; p < MAX_S; ++p) base[p] = p < S ? cluster_map_u32(tile, p) : 0;
    for (int i0 = tid; i0 < items; i0 += BATCH * nthreads) {
        float4 v[BATCH][MAX_S];
        int r[BATCH], c[BATCH];
#pragma unroll
        for (int u = 0; u < BATCH; ++u) {
            const int i = i0 + u * nthreads;
            r[u] = i < items ? r_begin + i / quads : -1;
            c[u] = (i % quads) * 4;
            const int off = r[u] * pitch + c[u];
#pragma unroll
            for (int p = 0; p < MAX_S; ++p)
                if (r[u] >= 0 && p < S)
                    v[u][p] = p == rank ? *reinterpret_cast<const float4*>(tile + off)
                                        : ld_cluster_v4(base[p] + off * (int)sizeof(float));
        }
#pragma unroll
        for (int u = 0; u < BATCH; ++u) {
            if (r[u] < 0) break;
            float4 sum = v[u][0];
#pragma unroll
            for (int p = 1; p < MAX_S; ++p)
                if (p < S) {
                    sum.x += v[u][p].x; sum.y += v[u][p].y; sum.z += v[u][p].z; sum.w += v[u][p].w;
                }
            const int gr = m0 + r[u], gc = n0 + c[u];
            float* dst = C + (size_t)gr * N + gc;
            if (vec_store && gc + 3 < N) {
                *reinterpret_cast<float4*>(dst) =
                    make_float4(epilogue(sum.x, bias, gc, act), epilogue(sum.y, bias, gc + 1, act),
                                epilogue(sum.z, bias, gc + 2, act), epilogue(sum.w, bias, gc + 3, act));
            } else {
                const float w[4] = {sum.x, sum.y, sum.z, sum.w};
                for (int e = 0; e < 4 && gc + e < N; ++e) dst[e] = epilogue(w[e], bias, gc + e, act);  // bias has N
            }
        }
    }
}
// `reduce` between the reduction's two cluster barriers. Every thread of every block of the cluster
// must pass both: threads that add nothing (wgmma.cuh's producer warpgroup) call it with nothing.
template <class F>
__device__ __forceinline__ void cluster_reduce_barriers(F&& reduce) {
    cluster_arrive_release();
    cluster_wait_acquire();  // every block's partial tile is written
    reduce();
    cluster_arrive_relaxed();
    cluster_wait_acquire();  // no block leaves while another still reads its tile
}
__device__ __forceinline__ void cluster_reduce_store(const float* tile, int rows, int cols, int pitch, int m0, int n0,
                                                     int M, int N, const float* __restrict__ bias, Act act,
                                                     float* __restrict__ C, int tid, int nthreads) {
    cluster_reduce_barriers([&] {
        const unsigned S = cluster_size();
        if (S <= 2) cluster_reduce_rows<2, 8>(tile, rows, cols, pitch, m0, n0, M, N, bias, act, C, tid, nthreads);
        else if (S <= 4) cluster_reduce_rows<4, 4>(tile, rows, cols, pitch, m0, n0, M, N, bias, act, C, tid, nthreads);
        else cluster_reduce_rows<8, 2>(tile, rows, cols, pitch, m0, n0, M, N, bias, act, C, tid, nthreads);
    });
}
#endif  // __CUDACC__

// A cudaLaunchKernelEx configuration; with more than one block in `cluster` (an int: blocks
// along x) the blocks run in thread-block clusters of that shape (sm_90), described in
// attr[0], which must outlive the launch.
inline cudaLaunchConfig_t make_launch_config(dim3 grid, dim3 block, size_t smem, cudaStream_t stream, dim3 cluster,
                                             cudaLaunchAttribute* attr) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    if (cluster.x * cluster.y * cluster.z > 1) {
        attr[0].id = cudaLaunchAttributeClusterDimension;
        attr[0].val.clusterDim.x = cluster.x;
        attr[0].val.clusterDim.y = cluster.y;
        attr[0].val.clusterDim.z = cluster.z;
        cfg.attrs = attr;
        cfg.numAttrs = 1;
    }
    return cfg;
}

// Adds `fn` to anatomy_hooks() under `name` (nothing for nullptr); true, for the registration macro.
inline bool register_anatomy(const char* name, AnatomyFn fn) {
    if (fn) anatomy_hooks()[name] = fn;
    return true;
}

}  // namespace gemmpad::cuda

#define CUDA_CHECK(call) ::gemmpad::cuda::check((call), #call, __FILE__, __LINE__)
#define CUDA_CHECK_LAUNCH(name) ::gemmpad::cuda::check_launch((name), __FILE__, __LINE__)

// GEMMPAD_REGISTER_CUDA("cuda.01_naive", "fp32", gemmpad::InType::F32, "one line", fn)
#define GEMMPAD_REGISTER_CUDA(NAME, PRECISION, IN_TYPE, SUMMARY, FN) \
    GEMMPAD_REGISTER_CUDA_RUNG(NAME, PRECISION, IN_TYPE, SUMMARY, FN, nullptr, nullptr, nullptr)
// The same for a kernel that runs only where UNAVAILABLE() returns "" (see KernelInfo::unavailable).
#define GEMMPAD_REGISTER_CUDA_IF(NAME, PRECISION, IN_TYPE, SUMMARY, FN, UNAVAILABLE) \
    GEMMPAD_REGISTER_CUDA_RUNG(NAME, PRECISION, IN_TYPE, SUMMARY, FN, UNAVAILABLE, nullptr, nullptr)
// The same with the problems it rejects (KernelInfo::rejects; nullptr: none) and its anatomy hook
// (Anatomy; nullptr: kernel_anatomy() says it has none).
#define GEMMPAD_REGISTER_CUDA_RUNG(NAME, PRECISION, IN_TYPE, SUMMARY, FN, UNAVAILABLE, REJECTS, ANATOMY)        \
    static const bool GEMMPAD_CONCAT(gemmpad_registered_, __LINE__) =                                         \
        ::gemmpad::cuda::CudaRegistry::instance().add(                                                        \
            ::gemmpad::KernelInfo{NAME, PRECISION, IN_TYPE, SUMMARY, ::gemmpad::repo_path(__FILE__), UNAVAILABLE, \
                                  REJECTS, {}},                                                               \
            FN) &&                                                                                            \
        ::gemmpad::cuda::register_anatomy(NAME, ANATOMY)
// A dispatcher (gemm/dispatch.cu): FN routes each problem to one of the rungs named after it
// (KernelInfo::routes, every rung it may run).
#define GEMMPAD_REGISTER_CUDA_AUTO(NAME, PRECISION, IN_TYPE, SUMMARY, FN, ...)                                \
    static const bool GEMMPAD_CONCAT(gemmpad_registered_, __LINE__) =                                        \
        ::gemmpad::cuda::CudaRegistry::instance().add(                                                       \
            ::gemmpad::KernelInfo{NAME, PRECISION, IN_TYPE, SUMMARY, ::gemmpad::repo_path(__FILE__), nullptr, \
                                  nullptr, {__VA_ARGS__}},                                                   \
            FN)
