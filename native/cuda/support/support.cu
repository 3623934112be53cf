// The support layer's implementation (support/*.cuh): errors, the device, the registry's
// anatomy, the workspace, operand fills, and TMA tensor maps (ptx/tma.cuh's host side).
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cxxabi.h>  // __cxa_demangle: the kernel instance's readable name

#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>
#include <memory>
#include <type_traits>
#include <utility>

#include "../ptx/tma.cuh"
#include "buffer.cuh"
#include "check.cuh"
#include "device.cuh"
#include "fill.cuh"
#include "registry.cuh"

namespace gemmpad::cuda {

void check(cudaError_t err, const char* call, const char* file, int line) {
    if (err == cudaSuccess) return;
    cudaGetLastError();  // clear a sticky-free error so the next call starts clean
    throw CudaError(err, std::string(call) + " failed: " + cudaGetErrorString(err) + " (" +
                             cudaGetErrorName(err) + ") at " + repo_path(file) + ":" + std::to_string(line));
}

void check_launch(const char* kernel_name, const char* file, int line) {
    static const bool sync = [] {
        const char* v = std::getenv("GEMMPAD_SYNC_CHECK");
        return v && v[0] == '1';
    }();
    cudaError_t err = cudaGetLastError();
    if (err == cudaSuccess && sync) err = cudaDeviceSynchronize();
    if (err != cudaSuccess)
        throw CudaError(err, std::string("launch of ") + kernel_name + " failed: " + cudaGetErrorString(err) + " (" +
                                 cudaGetErrorName(err) + ") at " + repo_path(file) + ":" + std::to_string(line));
}

const cudaDeviceProp& device_props() {
    static cudaDeviceProp props;
    static int cached_device = -1;
    int dev = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    if (dev != cached_device) {
        CUDA_CHECK(cudaGetDeviceProperties(&props, dev));
        cached_device = dev;
    }
    return props;
}

// (nvcc's own __CUDA_ARCH_LIST__ says 900 for sm_90 and sm_90a alike, hence CMake's list.)
std::string build_arch_list() {
#ifdef GEMMPAD_CUDA_ARCHITECTURES
    return GEMMPAD_CUDA_ARCHITECTURES;
#else
    return "";  // built without CMake (native/tools/mlp_probe)
#endif
}

std::map<std::string, AnatomyFn>& anatomy_hooks() {
    static std::map<std::string, AnatomyFn> hooks;
    return hooks;
}

std::string dispatcher_unavailable(const char* name) {
    const auto& routes = CudaRegistry::instance().get(name).info.routes;
    std::string first;
    for (const auto& rung : routes) {
        const auto& info = CudaRegistry::instance().get(rung).info;
        const std::string why = info.unavailable ? info.unavailable() : "";
        if (why.empty()) return "";
        if (first.empty()) first = rung + ": " + why;
    }
    return "none of its rungs can run here (" + first + ")";
}

std::string& last_dispatched() {
    static std::string name;
    return name;
}

namespace {
// "gemmpad::cuda::small::small_kernel<Tile<__half, 16, 16, false>>" from the instance's mangled
// name: namespaces kept, "(anonymous namespace)::" and the parameter list dropped.
std::string kernel_instance_name(const void* kernel) {
    const char* mangled = nullptr;
    if (cudaFuncGetName(&mangled, kernel) != cudaSuccess || mangled == nullptr) {
        cudaGetLastError();
        return "?";
    }
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> plain(abi::__cxa_demangle(mangled, nullptr, nullptr, &status), std::free);
    std::string s = status == 0 && plain ? plain.get() : mangled;
    for (const std::string anon = "(anonymous namespace)::"; s.find(anon) != std::string::npos;)
        s.erase(s.find(anon), anon.size());
    int depth = 0;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '<') ++depth;
        else if (s[i] == '>') --depth;
        else if (s[i] == '(' && depth == 0) return s.substr(0, i);
    }
    return s;
}
std::string dims(dim3 d) {
    return std::to_string(d.x) + "x" + std::to_string(d.y) + (d.z > 1 ? "x" + std::to_string(d.z) : "");
}
}  // namespace

std::map<std::string, std::string> kernel_anatomy(const std::string& name, const GemmProblem& p) {
    const auto& entry = CudaRegistry::instance().get(name);
    std::string why = entry.info.unavailable ? entry.info.unavailable() : "";
    if (why.empty() && entry.info.rejects) why = entry.info.rejects(p);
    if (!why.empty()) throw Unavailable(name, why);
    const auto hook = anatomy_hooks().find(name);
    if (hook == anatomy_hooks().end())
        throw Unavailable(name, entry.info.routes.empty() ? "its file has no anatomy hook"
                                                          : "a dispatcher: ask for the anatomy of the rung it routes to");
    const Anatomy a = hook->second(p);
    cudaFuncAttributes attr{};
    CUDA_CHECK(cudaFuncGetAttributes(&attr, a.kernel));
    if (a.dynamic_smem > 48 * 1024)  // as the launch opts in, so that the occupancy query sees the same limit
        CUDA_CHECK(cudaFuncSetAttribute(a.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)a.dynamic_smem));
    const int threads = (int)(a.block.x * a.block.y * a.block.z);
    int blocks_per_sm = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, a.kernel, threads, a.dynamic_smem));
    const cudaDeviceProp& d = device_props();
    const int warps = blocks_per_sm * ceil_div(threads, 32), max_warps = d.maxThreadsPerMultiProcessor / 32;
    std::map<std::string, std::string> out;
    out["kernel"] = kernel_instance_name(a.kernel);
    out["block_tile"] = std::to_string(a.bm) + "x" + std::to_string(a.bn) + (a.bk ? "x" + std::to_string(a.bk) : "");
    out["warp_tile"] = a.wm ? std::to_string(a.wm) + "x" + std::to_string(a.wn) : "";
    out["thread_tile"] = a.tm ? std::to_string(a.tm) + "x" + std::to_string(a.tn) : "";
    out["threads_per_block"] = std::to_string(threads);
    out["registers_per_thread"] = std::to_string(attr.numRegs);
    out["static_smem_bytes"] = std::to_string(attr.sharedSizeBytes);
    out["dynamic_smem_bytes"] = std::to_string(a.dynamic_smem);
    out["smem_per_block_bytes"] = std::to_string(attr.sharedSizeBytes + a.dynamic_smem);
    out["max_active_blocks_per_sm"] = std::to_string(blocks_per_sm);
    out["active_warps_per_sm"] = std::to_string(warps);
    out["max_warps_per_sm"] = std::to_string(max_warps);
    out["occupancy"] = std::to_string(max_warps ? (double)warps / max_warps : 0.0);
    out["grid"] = dims(a.grid);
    out["blocks"] = std::to_string((size_t)a.grid.x * a.grid.y * a.grid.z);
    out["cluster"] = dims(a.cluster);
    out["note"] = a.note;
    out["device"] = d.name;
    return out;
}

size_t max_smem_per_block_optin() { return device_props().sharedMemPerBlockOptin; }

void require_smem(size_t bytes, const std::string& what) {
    if (bytes > max_smem_per_block_optin())
        throw std::runtime_error(what + " needs " + std::to_string(bytes) +
                                 " bytes of shared memory per block; this device allows " +
                                 std::to_string(max_smem_per_block_optin()));
}

CUtensorMap tensor_map(const void* base, CUtensorMapDataType type, uint32_t rank, const uint64_t* dims,
                       const uint64_t* strides, const uint32_t* box, CUtensorMapSwizzle swizzle, const std::string& what) {
    static const PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
        void* f = nullptr;
        cudaDriverEntryPointQueryResult q{};
#if CUDART_VERSION >= 12050
        CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q));
#else
        CUDA_CHECK(cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &f, cudaEnableDefault, &q));
#endif
        if (q != cudaDriverEntryPointSuccess || f == nullptr)
            throw CudaError(cudaErrorNotSupported, "cuTensorMapEncodeTiled is not available from this driver");
        return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
    }();
    CUtensorMap map;
    const cuuint32_t elem_strides[5] = {1, 1, 1, 1, 1};
    const CUresult r = encode(&map, type, rank, const_cast<void*>(base), reinterpret_cast<const cuuint64_t*>(dims),
                              reinterpret_cast<const cuuint64_t*>(strides), reinterpret_cast<const cuuint32_t*>(box),
                              elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                              CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        throw CudaError(cudaErrorInvalidValue,
                        "cuTensorMapEncodeTiled failed (CUresult " + std::to_string((int)r) + ") for " + what);
    return map;
}

CUtensorMap tensor_map_2d(const void* base, CUtensorMapDataType type, size_t elem_bytes, uint64_t rows, uint64_t cols,
                          uint32_t box_rows, uint32_t box_cols, CUtensorMapSwizzle swizzle, const std::string& what,
                          uint64_t ld) {
    const uint64_t dims[2] = {cols, rows};  // innermost first
    const uint64_t strides[1] = {(ld ? ld : cols) * elem_bytes};
    const uint32_t box[2] = {box_cols, box_rows};
    return tensor_map(base, type, 2, dims, strides, box, swizzle,
                      what + " (" + std::to_string(rows) + "x" + std::to_string(cols) + ")");
}

namespace {
FreeGuard g_free_guard = nullptr;  // set during static initialisation (resident.cu), read afterwards
}  // namespace

FreeGuard set_free_guard(FreeGuard guard) { return std::exchange(g_free_guard, guard); }

void run_free_guard() noexcept {
    if (g_free_guard) g_free_guard();
}

void* workspace(size_t bytes) {
    static DeviceBuffer* buffer = new DeviceBuffer();  // never destroyed: the driver may be gone at exit
    return buffer->reserve(bytes);
}

int resident_clusters(const void* kernel, int threads, size_t smem, int size) {
    static std::map<const void*, std::array<int, 9>> resident;  // per kernel: clusters of 2..8 blocks at once
    auto it = resident.find(kernel);
    if (it == resident.end()) {
        std::array<int, 9> n{};
        for (int c = 2; c <= 8 && device_props().major >= 9; ++c) {
            cudaLaunchAttribute attr[1];
            const cudaLaunchConfig_t cfg = make_launch_config(dim3(c), dim3(threads), smem, nullptr, dim3(c), attr);
            if (cudaOccupancyMaxActiveClusters(&n[c], kernel, &cfg) != cudaSuccess) {
                n[c] = 0;
                cudaGetLastError();  // a query, not a launch: clear it
            }
        }
        it = resident.emplace(kernel, n).first;
    }
    return size >= 2 && size <= 8 ? it->second[size] : 0;
}

namespace {

template <class T>
__device__ inline T from_float(float v) {
    if constexpr (std::is_same_v<T, __half>) return __float2half_rn(v);
    else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16_rn(v);
    else if constexpr (std::is_same_v<T, __nv_fp8_e4m3>) return __nv_fp8_e4m3(v);  // saturates to +-448
    else return v;
}

template <class T>
__global__ void cast_kernel(const float* __restrict__ src, T* __restrict__ dst, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = from_float<T>(src[i]);
}

__device__ inline float hash_uniform(size_t i, unsigned seed, float lo, float hi) {
    // splitmix-style integer hash -> [0, 1)
    unsigned long long x = (unsigned long long)i * 0x9E3779B97F4A7C15ull + seed * 0xBF58476D1CE4E5B9ull + 1;
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    x ^= x >> 31;
    float u = (float)(x >> 40) * (1.0f / 16777216.0f);
    return lo + (hi - lo) * u;
}

template <class T>
__global__ void fill_kernel(T* dst, size_t n, unsigned seed, float lo, float hi) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        dst[i] = from_float<T>(hash_uniform(i, seed, lo, hi));
    }
}

int grid_for(size_t n) {
    size_t blocks = (n + 255) / 256;
    return (int)(blocks < 65535 ? (blocks == 0 ? 1 : blocks) : 65535);
}

// f(T*) with `dst` as a pointer to the element type of `t`: the one place an InType becomes a type.
template <class F>
void with_element_type(InType t, void* dst, F&& f) {
    if (t == InType::F16) f(static_cast<__half*>(dst));
    else if (t == InType::BF16) f(static_cast<__nv_bfloat16*>(dst));
    else if (t == InType::F8E4M3) f(static_cast<__nv_fp8_e4m3*>(dst));
    else f(static_cast<float*>(dst));
}

}  // namespace

void cast_f32(const float* src, void* dst, size_t n, InType to, cudaStream_t stream) {
    with_element_type(to, dst, [&](auto* out) { cast_kernel<<<grid_for(n), 256, 0, stream>>>(src, out, n); });
    CUDA_CHECK_LAUNCH("cast_f32");
}

void fill_uniform(void* dst, InType t, size_t n, unsigned seed, float lo, float hi, cudaStream_t stream) {
    with_element_type(t, dst, [&](auto* out) { fill_kernel<<<grid_for(n), 256, 0, stream>>>(out, n, seed, lo, hi); });
    CUDA_CHECK_LAUNCH("fill_uniform");
}

}  // namespace gemmpad::cuda
