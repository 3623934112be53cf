// gemmpad._cuda: the CUDA kernels of the registry, exposed to Python.
//
// Built only when CMake finds nvcc. Linked against the static CUDA runtime so
// that importing it never fails on a machine without a driver or GPU;
// `status()` then says why CUDA cannot be used. Every CUDA error becomes
// gemmpad.errors.CudaError (or CudaOutOfMemory) naming the failing call.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <climits>
#include <optional>
#include <vector>

#include "bind.h"
#include "support/buffer.cuh"
#include "support/check.cuh"
#include "support/device.cuh"
#include "support/events.cuh"
#include "support/fill.cuh"
#include "support/registry.cuh"

namespace py = pybind11;
using namespace gemmpad;
using namespace gemmpad::cuda;

namespace {

using F32Array = py::array_t<float, py::array::c_style>;

// The numpy entry points' device buffers, reused so that repeated calls do not pay cudaMalloc.
struct Buffers {
    DeviceBuffer a32, b32, a16, b16, bias, c, flush;
};

Buffers& buffers() {
    static Buffers* b = new Buffers();  // never destroyed: the driver may be gone at exit
    return *b;
}

py::dict status() {
    py::dict d;
    int runtime = 0, driver = 0, count = 0;
    cudaRuntimeGetVersion(&runtime);
    cudaDriverGetVersion(&driver);
    d["runtime_version"] = runtime;
    d["driver_version"] = driver;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
        cudaGetLastError();
        d["available"] = false;
        d["reason"] = driver == 0 ? std::string("no NVIDIA driver found (") + cudaGetErrorString(err) + ")"
                                  : std::string("cudaGetDeviceCount failed: ") + cudaGetErrorString(err) + " (" +
                                        cudaGetErrorName(err) + ")";
        d["device_count"] = 0;
        return d;
    }
    d["device_count"] = count;
    if (count == 0) {
        d["available"] = false;
        d["reason"] = "no CUDA device found";
        return d;
    }
    cudaDeviceProp p;
    err = cudaGetDeviceProperties(&p, 0);
    if (err != cudaSuccess) {
        cudaGetLastError();
        d["available"] = false;
        d["reason"] = std::string("cudaGetDeviceProperties failed: ") + cudaGetErrorString(err);
        return d;
    }
    d["available"] = true;
    d["reason"] = "";
    d["name"] = std::string(p.name);
    d["compute_capability"] = std::to_string(p.major) + "." + std::to_string(p.minor);
    d["multiprocessors"] = p.multiProcessorCount;
    d["total_memory"] = (size_t)p.totalGlobalMem;
    d["l2_bytes"] = p.l2CacheSize;
    d["smem_per_block_optin"] = (size_t)p.sharedMemPerBlockOptin;
    return d;
}

py::list list_kernels() {
    py::list out;
    for (const auto& k : CudaRegistry::instance().list()) {
        py::dict d;
        d["name"] = k.name;
        d["precision"] = k.precision;
        d["in_type"] = k.in_type == InType::F16    ? "f16"
                       : k.in_type == InType::BF16   ? "bf16"
                       : k.in_type == InType::F8E4M3 ? "f8e4m3"
                                                     : "f32";
        d["summary"] = k.summary;
        d["source"] = k.source;
        d["unavailable_reason"] = k.unavailable ? k.unavailable() : std::string();
        d["routes"] = k.routes;
        out.append(d);
    }
    return out;
}

// Upload operands in the kernel's input type; returns device pointers.
std::pair<const void*, const void*> upload_operands(InType in_type, const float* a, size_t na, const float* b,
                                                    size_t nb) {
    Buffers& bf = buffers();
    float* da = static_cast<float*>(bf.a32.reserve(na * sizeof(float)));
    float* db = static_cast<float*>(bf.b32.reserve(nb * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(da, a, na * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(db, b, nb * sizeof(float), cudaMemcpyHostToDevice));
    if (in_type == InType::F32) return {da, db};
    void* ha = bf.a16.reserve(na * in_bytes(in_type));
    void* hb = bf.b16.reserve(nb * in_bytes(in_type));
    cast_f32(da, ha, na, in_type, nullptr);
    cast_f32(db, hb, nb, in_type, nullptr);
    return {ha, hb};
}

// out = act(a @ b + bias). `out` is copied to the device first, so a caller
// that poisons it (tests do, with NaN) sees any element the kernel left unwritten.
void run_gemm(const std::string& name, F32Array a, F32Array b, std::optional<F32Array> bias, int act, F32Array out) {
    if (a.ndim() != 2 || b.ndim() != 2 || out.ndim() != 2) throw std::invalid_argument("a, b and out must be 2-D");
    if (a.shape(0) > INT_MAX || a.shape(1) > INT_MAX || b.shape(1) > INT_MAX)
        throw std::invalid_argument("a dimension is over 2**31 - 1");  // GemmProblem's int
    const int M = (int)a.shape(0), K = (int)a.shape(1), N = (int)b.shape(1);
    if (b.shape(0) != K || out.shape(0) != M || out.shape(1) != N)
        throw std::invalid_argument("shape mismatch between a, b and out");
    if (bias && (bias->ndim() != 1 || bias->shape(0) != N)) throw std::invalid_argument("bias must have shape (N,)");
    const auto& entry = CudaRegistry::instance().get(name);
    const float* ha = a.data();
    const float* hb = b.data();
    const float* hbias = bias ? bias->data() : nullptr;
    float* hc = out.mutable_data();
    const size_t nc = (size_t)M * N;
    py::gil_scoped_release nogil;
    Buffers& bf = buffers();
    auto [da, db] = upload_operands(entry.info.in_type, ha, (size_t)M * K, hb, (size_t)K * N);
    float* dbias = nullptr;
    if (hbias) {
        dbias = static_cast<float*>(bf.bias.reserve(N * sizeof(float)));
        CUDA_CHECK(cudaMemcpy(dbias, hbias, N * sizeof(float), cudaMemcpyHostToDevice));
    }
    float* dc = static_cast<float*>(bf.c.reserve(nc * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(dc, hc, nc * sizeof(float), cudaMemcpyHostToDevice));
    GemmProblem p;
    p.M = M; p.N = N; p.K = K;
    p.A = da; p.B = db; p.bias = dbias; p.C = dc;
    p.act = static_cast<Act>(act);
    p.in_type = entry.info.in_type;
    entry.launch(p, nullptr);
    CUDA_CHECK(cudaMemcpy(hc, dc, nc * sizeof(float), cudaMemcpyDeviceToHost));
}

// The anatomy of kernel `name` at an M x N x K problem (common.cuh, kernel_anatomy), its operands
// laid out as a fresh allocation lays them out (256-byte aligned, rows of K and N elements): the
// launch the rung would make, with the compiled kernel's registers, shared memory and occupancy.
py::dict anatomy(const std::string& name, int M, int N, int K) {
    if (M < 1 || N < 1 || K < 1) throw std::invalid_argument("M, N, K must be >= 1");
    const auto& entry = CudaRegistry::instance().get(name);
    GemmProblem p;
    p.M = M; p.N = N; p.K = K;
    p.A = p.B = p.C = reinterpret_cast<float*>(uintptr_t{256});  // only their alignment is read
    p.in_type = entry.info.in_type;
    const auto fields = kernel_anatomy(name, p);
    static const std::vector<std::string> counts = {"threads_per_block", "registers_per_thread", "static_smem_bytes",
                                                    "dynamic_smem_bytes", "smem_per_block_bytes",
                                                    "max_active_blocks_per_sm", "active_warps_per_sm",
                                                    "max_warps_per_sm", "blocks"};
    py::dict d;
    d["name"] = name;
    d["shape"] = py::make_tuple(M, N, K);
    for (const auto& [key, value] : fields) {
        if (std::find(counts.begin(), counts.end(), key) != counts.end()) d[key.c_str()] = std::stoll(value);
        else if (key == "occupancy") d[key.c_str()] = std::stod(value);
        else d[key.c_str()] = value;
    }
    return d;
}

constexpr int kQueuedReps = 64;  // timed reps in flight before bench_gemm waits for them

// Kernel time of the named kernel on an M x N x K problem with operands uniform in
// [-1, 1) (as the bench's cuBLAS reference draws its own), resident on the device:
// `warmup` untimed launches, then `reps` launches each bracketed by its own pair of
// CUDA events, queued kQueuedReps at a time before a wait, so that no rep's time
// holds the host's launch of it (the GPU does not wait for the host between reps).
// With flush_l2, a buffer twice the L2 size is overwritten before every rep (outside
// the events) so no rep runs from cache. Returns the per-rep times in milliseconds.
std::vector<float> bench_gemm(const std::string& name, int M, int N, int K, int reps, int warmup, bool flush_l2,
                              bool with_bias, int act) {
    if (M < 1 || N < 1 || K < 1) throw std::invalid_argument("M, N, K must be >= 1");
    if (reps < 0 || warmup < 0) throw std::invalid_argument("reps and warmup must be >= 0");
    const auto& entry = CudaRegistry::instance().get(name);
    py::gil_scoped_release nogil;
    Buffers& bf = buffers();
    const InType t = entry.info.in_type;
    void* da = bf.a16.reserve((size_t)M * K * in_bytes(t));
    void* db = bf.b16.reserve((size_t)K * N * in_bytes(t));
    fill_uniform(da, t, (size_t)M * K, 1, -1.f, 1.f, nullptr);
    fill_uniform(db, t, (size_t)K * N, 2, -1.f, 1.f, nullptr);
    float* dbias = static_cast<float*>(bf.bias.reserve((size_t)N * sizeof(float)));
    fill_uniform(dbias, InType::F32, N, 3, -1.f, 1.f, nullptr);
    float* dc = static_cast<float*>(bf.c.reserve((size_t)M * N * sizeof(float)));
    const size_t flush_bytes = flush_l2 ? 2 * (size_t)device_props().l2CacheSize : 0;
    void* dflush = flush_l2 ? bf.flush.reserve(flush_bytes) : nullptr;
    GemmProblem p;
    p.M = M; p.N = N; p.K = K;
    p.A = da; p.B = db; p.bias = with_bias ? dbias : nullptr; p.C = dc;
    p.act = static_cast<Act>(act);
    p.in_type = entry.info.in_type;
    for (int i = 0; i < warmup; ++i) entry.launch(p, nullptr);
    CUDA_CHECK(cudaDeviceSynchronize());
    const int chunk = std::min(reps, kQueuedReps);
    Events start(chunk), stop(chunk);
    std::vector<float> times(reps);
    for (int first = 0; first < reps; first += chunk) {
        const int n = std::min(chunk, reps - first);
        for (int i = 0; i < n; ++i) {
            if (dflush) CUDA_CHECK(cudaMemsetAsync(dflush, (first + i) & 0xff, flush_bytes, nullptr));
            CUDA_CHECK(cudaEventRecord(start[i], nullptr));
            entry.launch(p, nullptr);
            CUDA_CHECK(cudaEventRecord(stop[i], nullptr));
        }
        CUDA_CHECK(cudaDeviceSynchronize());
        for (int i = 0; i < n; ++i) CUDA_CHECK(cudaEventElapsedTime(&times[first + i], start[i], stop[i]));
    }
    return times;
}

}  // namespace

PYBIND11_MODULE(_cuda, m) {
    m.doc() = "gemmpad CUDA kernels (built when nvcc is found)";
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const CudaError& e) {
            py::module_ errors = py::module_::import("gemmpad.errors");
            py::object cls = errors.attr(e.out_of_memory() ? "CudaOutOfMemory" : "CudaError");
            PyErr_SetString(cls.ptr(), e.what());
        } catch (const Unavailable& e) {
            PyErr_SetString(py::module_::import("gemmpad.errors").attr("KernelUnavailable").ptr(), e.what());
        }
    });
    m.def("status", &status, "Whether CUDA is usable here, and if not, why.");
    m.def("build_archs", &build_arch_list, "CUDA architectures compiled in, as CMake was given them (\"90a-real,90-virtual\").");
    m.def("kernels", &list_kernels, "The CUDA kernels of the registry, in ladder order.");
    m.def("gemm", &run_gemm, py::arg("name"), py::arg("a"), py::arg("b"), py::arg("bias"), py::arg("act"),
          py::arg("out"), "out = act(a @ b + bias) with the named kernel (host arrays in and out).");
    m.def("bench_gemm", &bench_gemm, py::arg("name"), py::arg("M"), py::arg("N"), py::arg("K"), py::arg("reps") = 50,
          py::arg("warmup") = 5, py::arg("flush_l2") = true, py::arg("with_bias") = false, py::arg("act") = 0,
          "Per-rep kernel times in ms (CUDA events), operands random and resident on the device.");
    m.def("dispatched", [] { return last_dispatched(); },
          "The rung the last dispatcher launch (cuda.auto_*) ran; \"\" before any.");
    m.def("kernel_anatomy", &anatomy, py::arg("name"), py::arg("M"), py::arg("N"), py::arg("K"),
          "Block/warp/thread tile, threads, registers, shared memory, occupancy and grid of the kernel the "
          "rung launches at M x N x K, read from the compiled kernel (KernelUnavailable where it cannot say).");
    gemmpad::cuda::bind_extras(m);
}
