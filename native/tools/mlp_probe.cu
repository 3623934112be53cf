// mlp_probe: the fused MLP kernels without Python, for one device call that
// answers "where does the time go": launch floors (empty kernels in a graph
// between events, clusters or not, mapped host memory, memcpy nodes), the SM
// clock under this cadence, L2 and tensor-core rates, every kernel
// configuration checked against a float64 reference (output poisoned with NaN)
// and timed, gemmpad's Mlp::forward end to end per I/O policy, and ("staging")
// how a large x reaches the device: host copy and DMA alone, a stamped copy of
// Mlp::stage_chunked per thread count, chunk size and store kind, Mlp::forward per policy;
// ("floors") the event-timed floor three ways: events as graph nodes around the kernel (what
// Mlp does), events on the stream around a graph of the kernel alone, and no graph at all.
//
//   nvcc -O3 -std=c++17 -arch=sm_90a -DGEMMPAD_MLP_PROBE -Inative/include -Inative/cuda/mlp \
//        native/tools/mlp_probe.cu native/cuda/mlp/*.cu native/cuda/common.cu -o /tmp/mlp_probe \
//     && /tmp/mlp_probe [all|final|check|rows|staging|loads|floors|ncu]
// (native/tools/mlp_probe.sh builds it that way, in parallel, and runs it on the GPU machine.)
// Add -DGEMMPAD_MLP_TRACE to every file for mode "trace": per-phase globaltimer stamps.
#ifndef GEMMPAD_MLP_PROBE
#error "mlp_probe needs -DGEMMPAD_MLP_PROBE on every file (the build line above)"
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "fused_common.cuh"

#ifdef GEMMPAD_MLP_TRACE
namespace gemmpad::cuda {
void fused_trace_read(unsigned long long* host);
void fused_trace_clear();
void ksplit_trace_read(unsigned long long* host);
void ksplit_trace_clear();
}  // namespace gemmpad::cuda
#endif

using namespace gemmpad::cuda;
using clk = std::chrono::steady_clock;

namespace {

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

// Median host-clock microseconds of `reps` calls of f after `warmup` untimed ones.
double host_median_us(const std::function<void()>& f, int reps, int warmup) {
    std::vector<double> v;
    for (int i = 0; i < warmup + reps; ++i) {
        const auto t0 = clk::now();
        f();
        const auto t1 = clk::now();
        if (i >= warmup) v.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    return median(v);
}

struct Model {
    std::vector<float> W1, b1, W2, b2, W3, b3;
};

Model random_model(std::mt19937& rng) {
    Model m;
    auto fill = [&](std::vector<float>& v, size_t n, double scale) {
        std::normal_distribution<float> d(0.0f, (float)scale);
        v.resize(n);
        for (auto& e : v) e = d(rng);
    };
    fill(m.W1, 784 * 100, std::sqrt(2.0 / 784));
    fill(m.b1, 100, 0.1);
    fill(m.W2, 100 * 100, std::sqrt(2.0 / 100));
    fill(m.b2, 100, 0.1);
    fill(m.W3, 100 * 10, std::sqrt(2.0 / 100));
    fill(m.b3, 10, 0.1);
    return m;
}

// Digit-like rows (80% zeros), row 0 dense, last row blank (as tests/test_cuda_mlp.py).
std::vector<float> inputs(std::mt19937& rng, int batch) {
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    std::vector<float> x((size_t)batch * 784);
    for (auto& v : x) {
        const float a = u(rng), keep = u(rng);
        v = keep > 0.8f ? a : 0.0f;
    }
    for (int k = 0; k < 784; ++k) x[k] = u(rng);
    if (batch > 2)
        for (int k = 0; k < 784; ++k) x[(size_t)(batch - 1) * 784 + k] = 0.0f;
    return x;
}

std::vector<double> reference(const Model& m, const std::vector<float>& x, int batch) {
    std::vector<double> out((size_t)batch * 10);
    std::vector<double> h1(100), h2(100), z(10);
    for (int r = 0; r < batch; ++r) {
        for (int c = 0; c < 100; ++c) {
            double s = m.b1[c];
            for (int k = 0; k < 784; ++k) s += (double)x[(size_t)r * 784 + k] * m.W1[(size_t)k * 100 + c];
            h1[c] = s > 0 ? s : 0;
        }
        for (int c = 0; c < 100; ++c) {
            double s = m.b2[c];
            for (int k = 0; k < 100; ++k) s += h1[k] * m.W2[k * 100 + c];
            h2[c] = s > 0 ? s : 0;
        }
        double mx = -1e300;
        for (int c = 0; c < 10; ++c) {
            double s = m.b3[c];
            for (int k = 0; k < 100; ++k) s += h2[k] * m.W3[k * 10 + c];
            z[c] = s;
            mx = std::max(mx, s);
        }
        double sum = 0;
        for (int c = 0; c < 10; ++c) sum += (z[c] = std::exp(z[c] - mx));
        for (int c = 0; c < 10; ++c) out[(size_t)r * 10 + c] = z[c] / sum;
    }
    return out;
}

// ||out - ref|| / ||ref||, NaN (unwritten) -> inf
double rel_error(const float* out, const double* ref, int batch) {
    double num = 0, den = 0;
    for (int i = 0; i < batch * 10; ++i) {
        if (!std::isfinite(out[i])) return INFINITY;
        num += (out[i] - ref[i]) * (out[i] - ref[i]);
        den += ref[i] * ref[i];
    }
    return std::sqrt(num / den);
}

// Mlp::forward on the first `batch` rows of x, `reps` times after `warmup` untimed calls, the
// output poisoned before each: medians of kernel and end-to-end time, and the last output's error.
struct ForwardTimes {
    double kernel_us, e2e_us, error;
};
ForwardTimes time_forward(Mlp& mlp, const char* kernel, const float* x, float* out, const double* ref, int batch,
                          int reps, int warmup) {
    std::vector<double> ks, es;
    for (int i = 0; i < warmup + reps; ++i) {
        std::fill(out, out + (size_t)batch * 10, NAN);
        const double e = mlp.forward(x, out, batch, kernel);
        const double k = mlp.kernel_us();
        if (i >= warmup) ks.push_back(k), es.push_back(e);
    }
    return {median(ks), median(es), rel_error(out, ref, batch)};
}

struct Timing {
    double kernel_us, e2e_us;
};

// What `enqueue` puts on the stream, captured and instantiated. A throw inside ends the capture
// first, so that the stream stays usable and the original error is the one reported.
cudaGraphExec_t capture_exec(cudaStream_t st, const std::function<void()>& enqueue) {
    cudaGraph_t g = nullptr;
    CUDA_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeRelaxed));
    try {
        enqueue();
    } catch (...) {
        cudaStreamEndCapture(st, &g);
        if (g) cudaGraphDestroy(g);
        cudaGetLastError();
        throw;
    }
    CUDA_CHECK(cudaStreamEndCapture(st, &g));
    cudaGraphExec_t ge;
    CUDA_CHECK(cudaGraphInstantiate(&ge, g, 0));
    CUDA_CHECK(cudaGraphDestroy(g));
    return ge;
}

// Medians over `reps` calls of `call`, after 50 untimed ones: the span between the events e0 and
// e1 that it records (divided by `inner`), and its host time. It returns with both complete.
Timing time_calls(cudaEvent_t e0, cudaEvent_t e1, const std::function<void()>& call, int reps, int inner = 1) {
    std::vector<double> ks, es;
    for (int i = 0; i < reps + 50; ++i) {
        const auto t0 = clk::now();
        call();
        const auto t1 = clk::now();
        float ms = 0;
        CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
        if (i >= 50) ks.push_back(ms * 1000.0 / inner), es.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    return {median(ks), median(es)};
}

// Kernel time of `enqueue` (events inside a graph, as Mlp does) and host time
// of launch + sync, medians of `reps` replays after a warm-up.
Timing time_graph(cudaStream_t st, const std::function<void()>& enqueue, int reps, int inner = 1,
                  const std::function<void()>& before = {}, const std::function<void()>& after = {},
                  const std::function<void()>& pre = {}, const std::function<void()>& post = {}) {
    cudaEvent_t e0, e1;
    CUDA_CHECK(cudaEventCreate(&e0));
    CUDA_CHECK(cudaEventCreate(&e1));
    cudaGraphExec_t ge = capture_exec(st, [&] {
        if (pre) pre();
        CUDA_CHECK(cudaEventRecordWithFlags(e0, st, cudaEventRecordExternal));
        for (int i = 0; i < inner; ++i) enqueue();
        CUDA_CHECK(cudaEventRecordWithFlags(e1, st, cudaEventRecordExternal));
        if (post) post();
    });
    const Timing t = time_calls(e0, e1, [&] {
        if (before) before();
        CUDA_CHECK(cudaGraphLaunch(ge, st));
        CUDA_CHECK(cudaStreamSynchronize(st));
        if (after) after();
    }, reps, inner);
    CUDA_CHECK(cudaGraphExecDestroy(ge));
    CUDA_CHECK(cudaEventDestroy(e0));
    CUDA_CHECK(cudaEventDestroy(e1));
    return t;
}

// The same measure without a graph: events recorded on the stream around a direct launch (the
// question: is part of the event-timed floor the graph's own work, not the kernel's?).
Timing time_stream(cudaStream_t st, const std::function<void()>& enqueue, int reps) {
    cudaEvent_t e0, e1;
    CUDA_CHECK(cudaEventCreate(&e0));
    CUDA_CHECK(cudaEventCreate(&e1));
    const Timing t = time_calls(e0, e1, [&] {
        CUDA_CHECK(cudaEventRecord(e0, st));
        enqueue();
        CUDA_CHECK(cudaEventRecord(e1, st));
        CUDA_CHECK(cudaStreamSynchronize(st));
    }, reps);
    CUDA_CHECK(cudaEventDestroy(e0));
    CUDA_CHECK(cudaEventDestroy(e1));
    return t;
}

// A graph of the kernel alone, the events recorded on the stream around its launch.
Timing time_graph_outside(cudaStream_t st, const std::function<void()>& enqueue, int reps) {
    cudaGraphExec_t ge = capture_exec(st, enqueue);
    const Timing t = time_stream(st, [&] { CUDA_CHECK(cudaGraphLaunch(ge, st)); }, reps);
    CUDA_CHECK(cudaGraphExecDestroy(ge));
    return t;
}

__global__ void empty_kernel() {}

__global__ void pcie_kernel(const float4* __restrict__ x, float* __restrict__ out, int n4, int write) {
    float4 v = threadIdx.x < n4 ? x[threadIdx.x] : make_float4(0, 0, 0, 0);
    float s = v.x + v.y + v.z + v.w;
    if (write && threadIdx.x < 10) out[threadIdx.x] = s;
}

__global__ void write_kernel(float* __restrict__ out) {
    if (threadIdx.x < 10) out[threadIdx.x] = threadIdx.x;
}

__device__ __forceinline__ unsigned long long globaltimer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void clock_kernel(long long* res, long long cycles) {
    const long long c0 = clock64();
    const unsigned long long t0 = globaltimer();
    while (clock64() - c0 < cycles) {
    }
    const long long c1 = clock64();
    const unsigned long long t1 = globaltimer();
    res[0] = c1 - c0;
    res[1] = (long long)(t1 - t0);
}

// Dependent loads: latency of one access to `p` (host-mapped, L2 or HBM).
__global__ void chase_kernel(const unsigned* p, int n, unsigned* sink, long long* cycles) {
    unsigned i = 0;
    const long long c0 = clock64();
    for (int k = 0; k < n; ++k) i = p[i];
    const long long c1 = clock64();
    sink[0] = i;
    cycles[0] = (c1 - c0) / n;
}

// mma.m16n8k8 tf32 throughput: 8 independent accumulators per warp.
__global__ void mma_kernel(int iters, float* sink) {
    float d[8][4] = {};
    uint32_t a[4] = {0x3f800000u, 0x3f000000u, 0x3e800000u, 0x3f800000u};
    uint32_t b0 = 0x3f800000u ^ threadIdx.x, b1 = 0x3e000000u;
    for (int it = 0; it < iters; ++it)
#pragma unroll
        for (int j = 0; j < 8; ++j)
            asm volatile(
                "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                "{%0,%1,%2,%3};\n"
                : "+f"(d[j][0]), "+f"(d[j][1]), "+f"(d[j][2]), "+f"(d[j][3])
                : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    float s = 0;
    for (int j = 0; j < 8; ++j) s += d[j][0] + d[j][1] + d[j][2] + d[j][3];
    if (s == 12345.0f) sink[0] = s;
}

// 8 independent 16-byte loads per thread in flight. mode 0: block b reads its own region
// of n4 float4s; 1: every block reads the same n4 (from the start); 7: the same, block b
// starting at (b % 7) / 7 of it.
__global__ void ldg8_kernel(const float4* __restrict__ src, int n4, int mode, float* sink) {
    const float4* base = mode == 0 ? src + (size_t)blockIdx.x * n4 : src;
    const int start = mode > 1 ? (int)((long long)(blockIdx.x % mode) * n4 / mode) : 0;
    float4 acc = make_float4(0, 0, 0, 0);
    for (int i0 = 0; i0 < n4; i0 += 8 * blockDim.x) {
        float4 v[8];
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const int i = i0 + j * blockDim.x + threadIdx.x;
            v[j] = i < n4 ? __ldg(base + (start + i) % n4) : make_float4(0, 0, 0, 0);
        }
#pragma unroll
        for (int j = 0; j < 8; ++j) acc.x += v[j].x, acc.y += v[j].y, acc.z += v[j].z, acc.w += v[j].w;
    }
    if (acc.x + acc.y + acc.z + acc.w == 12345.0f) sink[0] = 1;
}

// `pieces` bulk copies of `piece` bytes into shared memory, one mbarrier. distinct: block b
// reads its own bytes; else all blocks read the same.
__global__ void bulk_kernel(const char* src, unsigned piece, int pieces, int distinct, float* sink) {
    extern __shared__ __align__(128) unsigned char buf[];
    __shared__ __align__(8) uint64_t bar;
    if (threadIdx.x == 0) {
        mbar_init(&bar, 1);
        mbar_init_fence();
        mbar_expect_tx(&bar, piece * pieces);
        const char* s0 = src + (distinct ? (size_t)blockIdx.x * piece * pieces : 0);
        for (int p = 0; p < pieces; ++p) bulk_copy(buf + (size_t)p * piece, s0 + (size_t)p * piece, piece, &bar);
    }
    __syncthreads();
    mbar_wait(&bar, 0);
    if (buf[threadIdx.x] == 123 && buf[piece * pieces - 1 - threadIdx.x] == 45) sink[0] = 1;
}

// The same bytes to every block of a cluster of C: block r issues pieces r, r + C, ...
// with .multicast::cluster (one L2 read, C deliveries).
__global__ void mcast_kernel(const char* src, unsigned piece, int pieces, int C, float* sink) {
    extern __shared__ __align__(128) unsigned char buf[];
    __shared__ __align__(8) uint64_t bar;
    unsigned rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    if (threadIdx.x == 0) {
        mbar_init(&bar, 1);
        mbar_init_fence();
        mbar_expect_tx(&bar, piece * pieces);
    }
    __syncthreads();
    cluster_arrive_release();
    cluster_wait_acquire();  // every block's barrier is initialised before any copy lands
    if (threadIdx.x == 0)
        for (int p = (int)rank; p < pieces; p += C)
            bulk_copy_multicast(buf + (size_t)p * piece, src + (size_t)p * piece, piece, &bar,
                                (uint16_t)((1u << C) - 1));
    mbar_wait(&bar, 0);
    cluster_arrive_release();
    cluster_wait_acquire();
    if (buf[threadIdx.x] == 123 && buf[piece * pieces - 1 - threadIdx.x] == 45) sink[0] = 1;
}

__global__ void cbar_kernel(int n) {
    for (int i = 0; i < n; ++i) {
        cluster_arrive_release();
        cluster_wait_acquire();
    }
}

__global__ void flag_kernel(const float4* __restrict__ x, float* __restrict__ out, volatile unsigned* flag) {
    const float4 v = threadIdx.x < 196 ? x[threadIdx.x] : make_float4(0, 0, 0, 0);
    const float s = v.x + v.y + v.z + v.w;
    if (threadIdx.x < 10) out[threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence_system();
        *flag = 1;
    }
}

struct ToyParam {
    float x[784];
};
__global__ void param_kernel(ToyParam p, float* __restrict__ out) {
    float s = 0;
    for (int i = threadIdx.x; i < 784; i += blockDim.x) s += p.x[i];
    if (threadIdx.x < 10) out[threadIdx.x] = s;
}

void launch_cluster(cudaStream_t st, void (*k)(int), int blocks, int threads, int cluster, int n) {
    cudaLaunchAttribute attr[1];
    const cudaLaunchConfig_t cfg = make_launch_config(dim3(blocks), dim3(threads), 0, st, cluster, attr);
    CUDA_CHECK(cudaLaunchKernelEx(&cfg, k, n));
}

void launch_empty(cudaStream_t st, int blocks, int threads, int cluster) {
    cudaLaunchAttribute attr[1];
    const cudaLaunchConfig_t cfg = make_launch_config(dim3(blocks), dim3(threads), 0, st, cluster, attr);
    CUDA_CHECK(cudaLaunchKernelEx(&cfg, empty_kernel));
}

struct Config {
    std::string name;
    bool rows;
    int bm;
    Engine engine;
    bool cluster;
    double tol;
    int max_batch, min_batch;
    int cols = 16;
    bool ksplit = false;  // the k-split kernel (fused_mlp_ksplit.cu); `rows` is false then
    bool x_slices = false;  // split FMA tiles with clusters: x loaded by slices, shared over the cluster
    bool tma_x = false;     // rows: the x tile by TMA
};

}  // namespace

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "all";
    CUDA_CHECK(cudaSetDevice(0));
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    int drv = 0;
    CUDA_CHECK(cudaDriverGetVersion(&drv));
    std::printf("device %s, %d SMs, L2 %d MB, smem/block optin %zu KB, driver API %d\n", prop.name,
                prop.multiProcessorCount, prop.l2CacheSize >> 20, prop.sharedMemPerBlockOptin >> 10, drv);
    cudaStream_t st;
    CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    std::mt19937 rng(1234);
    const Model model = random_model(rng);
    Mlp mlp(model.W1.data(), model.b1.data(), model.W2.data(), model.b2.data(), model.W3.data(), model.b3.data());
    const int kMax = 4096;
    const std::vector<float> x_all = inputs(rng, kMax);
    std::printf("reference (float64, %d rows)...\n", kMax);
    std::fflush(stdout);
    const std::vector<double> ref_all = reference(model, x_all, kMax);

    float *x_dev, *out_dev, *x_host, *out_host, *x_map, *out_map, *partials;
    unsigned* counters;
    CUDA_CHECK(cudaMalloc(&x_dev, (size_t)kMax * 784 * 4));
    CUDA_CHECK(cudaMalloc(&out_dev, (size_t)kMax * 10 * 4));
    CUDA_CHECK(cudaHostAlloc(&x_host, (size_t)kMax * 784 * 4, cudaHostAllocMapped));
    CUDA_CHECK(cudaHostAlloc(&out_host, (size_t)kMax * 10 * 4, cudaHostAllocMapped));
    CUDA_CHECK(cudaHostGetDevicePointer((void**)&x_map, x_host, 0));
    CUDA_CHECK(cudaHostGetDevicePointer((void**)&out_map, out_host, 0));
    const auto [pfloats, pcount] = fused_scratch_size(kMax);
    CUDA_CHECK(cudaMalloc(&partials, pfloats * 4));
    CUDA_CHECK(cudaMalloc(&counters, pcount * 4));
    CUDA_CHECK(cudaMemset(counters, 0, pcount * 4));
    CUDA_CHECK(cudaMemcpy(x_dev, x_all.data(), x_all.size() * 4, cudaMemcpyHostToDevice));
    std::memcpy(x_host, x_all.data(), x_all.size() * 4);
    const FusedWeights fw = mlp.fused_weights();
    const FusedScratch fs{partials, counters};

    std::vector<Config> configs;  // every variant the kernels offer
    for (int cols : {16, 8})
        for (bool cl : {true, false}) {
            const std::string c = " c" + std::to_string(cols) + (cl ? " +cl" : " -cl");
            for (int bm : {1, 2, 4}) {
                if (cols == 8 && bm > 2) continue;
                configs.push_back({"split bm" + std::to_string(bm) + " fma" + c, false, bm, Engine::Fma, cl, 1e-5, 1100, 1, cols});
                if (cl) {
                    configs.push_back(configs.back());
                    configs.back().name += " xs";
                    configs.back().x_slices = true;
                }
            }
            if (cols == 8) continue;
            configs.push_back({"split bm16 3xtf32" + c, false, 16, Engine::Tf32x3, cl, 1e-5, kMax, 1, cols});
            configs.push_back({"split bm16 tf32" + c, false, 16, Engine::Tf32, cl, 5e-3, kMax, 1, cols});
        }
    for (int bm : {16, 32})
        for (Engine e : {Engine::Tf32x3, Engine::Tf32})
            for (bool tma : {false, true}) {
                configs.push_back({"rows bm" + std::to_string(bm) + " w7 rot" + (tma ? " tma" : "") +
                                       (e == Engine::Tf32 ? " tf32" : " 3xtf32"),
                                   true, bm, e, false, e == Engine::Tf32 ? 5e-3 : 1e-5, kMax, 16, 16});
                configs.back().tma_x = tma;
            }
    for (int bm : {16, 32, 64})
        for (Engine e : {Engine::Tf32x3, Engine::Tf32})
            configs.push_back({"ksplit bm" + std::to_string(bm) + " w7" + (e == Engine::Tf32 ? " tf32" : " 3xtf32"), false,
                               bm, e, true, e == Engine::Tf32 ? 5e-3 : 1e-5, kMax, 1, 16, true});
    auto plan_of = [](const Config& c) {
        FusedPlan p;
        p.design = c.ksplit ? FusedPlan::KSplit : c.rows ? FusedPlan::Rows : FusedPlan::Split;
        p.bm = c.bm;
        p.engine = c.engine;
        p.cols = c.cols;
        p.cluster = c.cluster;
        p.x_slices = c.x_slices;
        p.tma_x = c.tma_x;
        return p;
    };
    auto launch = [&](const Config& c, const float* x, float* out, int batch) {
        set_fused_clusters(true);  // sm_90 features on; plan.cluster picks the split kernel's path
        launch_fused(plan_of(c), fw, x, out, batch, fs, st);
    };
    auto find = [&](const std::string& name) -> const Config& {
        for (const auto& c : configs)
            if (c.name == name) return c;
        throw std::runtime_error("no config " + name);
    };

    if (mode == "floors") {  // the event-timed floor: graph with event nodes, graph with events outside, no graph
        CUDA_CHECK(cudaFuncSetAttribute(empty_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
        std::printf("\n== floors three ways (kernel = events, e2e = host enqueue + sync), median of 2000; rounds of each\n");
        auto row = [](const std::string& what, Timing t) { std::printf("  %-62s kernel %6.2f us  e2e %6.2f us\n", what.c_str(), t.kernel_us, t.e2e_us); };
        const std::vector<std::pair<std::string, std::function<void()>>> ks = {
            {"empty 1x32", [&] { launch_empty(st, 1, 32, 1); }},
            {"empty 14x448 cluster 14", [&] { launch_empty(st, 14, 448, 14); }},
            {"empty 112x224 cluster 7", [&] { launch_empty(st, 112, 224, 7); }},
            {"split bm1 fma c8 +cl xs, batch 1, x mapped", [&] { launch(find("split bm1 fma c8 +cl xs"), x_map, out_map, 1); }},
            {"split bm1 fma c8 +cl, batch 1, x device", [&] { launch(find("split bm1 fma c8 +cl"), x_dev, out_dev, 1); }},
            {"ksplit bm16 w7 tf32, batch 256", [&] { launch(find("ksplit bm16 w7 tf32"), x_dev, out_dev, 256); }},
            {"ksplit bm32 w7 3xtf32, batch 256", [&] { launch(find("ksplit bm32 w7 3xtf32"), x_dev, out_dev, 256); }},
        };
        for (int round = 0; round < 2; ++round)
            for (const auto& [name, k] : ks) {
                row(name + " | graph [ev,k,ev]", time_graph(st, k, 2000));
                row(name + " | ev, graph [k], ev", time_graph_outside(st, k, 2000));
                row(name + " | ev, k, ev (no graph)", time_stream(st, k, 2000));
            }
        return 0;
    }
    if (mode == "ncu") {  // a few launches for ncu to profile (x in device memory)
        const std::vector<std::pair<std::string, int>> runs = {
            {"split bm1 fma c8 +cl", 1}, {"split bm16 3xtf32 c16 -cl", 256},
            {"rows bm32 w7 rot 3xtf32", 4096}, {"rows bm32 w7 rot tf32", 4096}};
        for (int rep = 0; rep < 2; ++rep)
            for (const auto& [name, b] : runs) launch(find(name), x_dev, out_dev, b);
        CUDA_CHECK(cudaStreamSynchronize(st));
        std::printf("ncu mode done\n");
        return 0;
    }
#ifdef GEMMPAD_MLP_TRACE
    if (mode == "trace") {  // globaltimer stamps per block and phase, batch 1 and 256
        std::vector<unsigned long long> tr(64 * 8);
        const char* phase[] = {"start", "x in (sync)", "weights in (bulk)", "h1 done", "partial pushed", "tail start", "end"};
        for (const auto& [name, b] : std::vector<std::pair<std::string, int>>{
                 {"split bm1 fma c16 +cl", 1}, {"split bm1 fma c8 +cl", 1}, {"split bm1 fma c8 +cl xs", 1}, {"split bm1 fma c16 -cl", 1},
                 {"split bm16 3xtf32 c16 -cl", 256}, {"split bm16 3xtf32 c16 +cl", 256}, {"ksplit bm16 w7 tf32", 16},
                 {"ksplit bm16 w7 tf32", 64}, {"ksplit bm32 w7 tf32", 256}, {"ksplit bm64 w7 tf32", 512},
                 {"ksplit bm64 w7 3xtf32", 512}, {"ksplit bm16 w7 tf32", 256}}) {
            const Config& c = find(name);
            const int blocks = std::min(64, ((b + c.bm - 1) / c.bm) * (c.ksplit ? 7 : 112 / c.cols));
            const char* kphase[] = {"start", "x in", "layer 1 done", "cluster wait", "h1 in", "h2 in", "logits in", "end"};
            std::vector<std::vector<double>> ph(8);  // per phase: block 0 (tail) and latest non-tail block, ns after earliest start
            std::vector<std::vector<double>> other(8);
            for (int rep = 0; rep < 300; ++rep) {
                c.ksplit ? ksplit_trace_clear() : fused_trace_clear();
                launch(c, x_dev, out_dev, b);
                CUDA_CHECK(cudaStreamSynchronize(st));
                c.ksplit ? ksplit_trace_read(tr.data()) : fused_trace_read(tr.data());
                unsigned long long t0 = ~0ull;
                for (int blk = 0; blk < blocks; ++blk) t0 = std::min(t0, tr[blk * 8]);
                for (int i = 0; i < 8; ++i) {
                    unsigned long long latest = 0;
                    for (int blk = 0; blk < blocks; ++blk)
                        if (tr[blk * 8 + i] >= t0) latest = std::max(latest, tr[blk * 8 + i]);
                    if (rep >= 50) other[i].push_back(latest ? double(latest - t0) : -1.0);
                }
            }
            std::printf("  trace %-32s batch %4d (ns after the first block starts; latest block):", name.c_str(), b);
            for (int i = 0; i < (c.ksplit ? 8 : 7); ++i)
                std::printf(" %s %.0f |", c.ksplit ? kphase[i] : phase[i], median(other[i]));
            std::printf("\n");
        }
        return 0;
    }
#endif

    // PROBE_FILTER="a|b|c": only configs whose name contains one of the parts (for the slow sanitizers,
    // and A/B runs of one kernel)
    const char* filter = std::getenv("PROBE_FILTER");
    auto selected = [&](const std::string& name) {
        if (mode == "rows" && name.rfind("rows", 0) != 0 && name.rfind("ksplit", 0) != 0) return false;
        if (!filter || !*filter) return true;
        std::string f = filter;
        size_t pos = 0;
        while (pos <= f.size()) {
            const size_t bar = f.find('|', pos);
            const std::string part = f.substr(pos, bar == std::string::npos ? std::string::npos : bar - pos);
            if (!part.empty() && name.find(part) != std::string::npos) return true;
            if (bar == std::string::npos) break;
            pos = bar + 1;
        }
        return false;
    };

    // ---------------------------------------------------------------- correctness
    if (mode == "all" || mode == "check" || mode == "final" || mode == "rows") {
        std::vector<int> batches = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257,
                                    300, 511, 512, 513, 1000, 1023, 1024, 1025, 2047, 4096};
        if (mode == "check") batches = {1, 2, 3, 17, 33, 257, 1025};  // under compute-sanitizer
        if (mode == "rows") batches = {16, 17, 33, 128, 1000, 1025, 2047, 4096};
        std::vector<float> out((size_t)kMax * 10);
        int failures = 0;
        for (const auto& c : configs)
            if (!c.rows && c.cluster) try {
                    std::printf("  max active clusters %-32s %d\n", c.name.c_str(),
                                c.ksplit ? fused_ksplit_max_clusters(plan_of(c)) : fused_split_max_clusters(plan_of(c)));
                } catch (const std::exception& e) {
                    std::printf("  max active clusters %-32s ERROR %s\n", c.name.c_str(), e.what());
                }
        std::printf("\n== correctness (rel. error vs float64; NaN-poisoned output; x in device memory and, up to 64, mapped)\n");
        for (const auto& c : configs) try {
            if (!selected(c.name)) continue;
            double worst = 0;
            int worst_b = 0;
            for (int b : batches) {
                if (b > c.max_batch || b < c.min_batch) continue;
                for (int mapped = 0; mapped < (b <= 64 ? 2 : 1); ++mapped) {
                    float* o = mapped ? out_map : out_dev;
                    if (mapped) std::fill(out_host, out_host + (size_t)b * 10, NAN);
                    else CUDA_CHECK(cudaMemsetAsync(out_dev, 0xff, (size_t)b * 40, st));  // NaN
                    launch(c, mapped ? x_map : x_dev, o, b);
                    CUDA_CHECK(cudaStreamSynchronize(st));
                    if (mapped) std::memcpy(out.data(), out_host, (size_t)b * 40);
                    else CUDA_CHECK(cudaMemcpyAsync(out.data(), out_dev, (size_t)b * 40, cudaMemcpyDeviceToHost, st));
                    CUDA_CHECK(cudaStreamSynchronize(st));
                    const double e = rel_error(out.data(), ref_all.data(), b);
                    if (!(e <= c.tol)) {
                        ++failures;
                        std::printf("  FAIL %s batch %d%s: rel error %.3g\n", c.name.c_str(), b, mapped ? " mapped" : "", e);
                    }
                    if (!(e <= worst)) worst = e, worst_b = b;
                }
            }
            std::printf("  %-32s worst rel error %.3g (batch %d)%s\n", c.name.c_str(), worst, worst_b,
                        worst <= c.tol ? "" : "  <-- FAIL");
        } catch (const std::exception& e) {
            ++failures;
            std::printf("  %-32s ERROR %s\n", c.name.c_str(), e.what());
        }
        // interleaved cluster / no-cluster runs: the counters must be back at zero each time
        for (int round = 0; round < 3; ++round)
            for (int ci = 0; ci < (int)configs.size(); ci += 5) {
                if (!selected(configs[ci].name)) continue;
                const int b = 33 + round * 100;
                CUDA_CHECK(cudaMemsetAsync(out_dev, 0xff, (size_t)b * 40, st));
                launch(configs[ci], x_dev, out_dev, b);
                CUDA_CHECK(cudaMemcpyAsync(out.data(), out_dev, (size_t)b * 40, cudaMemcpyDeviceToHost, st));
                CUDA_CHECK(cudaStreamSynchronize(st));
                const double e = rel_error(out.data(), ref_all.data(), b);
                if (!(e <= configs[ci].tol)) ++failures, std::printf("  FAIL interleaved %s batch %d: %.3g\n", configs[ci].name.c_str(), b, e);
            }
        std::printf("correctness: %d failures\n", failures);
        std::fflush(stdout);
        if (mode == "check") return failures ? 1 : 0;
    }

    // ---------------------------------------------------------------- the row-block kernel alone
    if (mode == "rows") {
        const int tb[] = {16, 64, 128, 256, 512, 1024, 2048, 4096};
        // x: 0 in device memory (L2-warm); 1 copied in just before the start event (as Mlp::forward
        // does); 2 copied in, then an empty kernel, then the start event (the copy engine hands over
        // to the compute queue before the timed span opens)
        const char* how[] = {"in device memory (L2-warm)", "copied in from pinned host memory just before (as Mlp::forward does)",
                             "copied in, then an empty kernel, then the start event"};
        for (int fresh = 0; fresh < 3; ++fresh) {
            std::printf("\n== row-block and k-split kernels (us, events around one graph-launched kernel, median of 200), x %s\n",
                        how[fresh]);
            std::printf("  %-32s", "config");
            for (int b : tb) std::printf(" %6d", b);
            std::printf("\n");
            auto row_of = [&](const std::string& name, const std::function<void(int)>& enqueue) {
                std::printf("  %-32s", name.c_str());
                for (int b : tb) {
                    const auto copy_in = [&] {
                        CUDA_CHECK(cudaMemcpyAsync(x_dev, x_host, (size_t)b * 784 * 4, cudaMemcpyHostToDevice, st));
                        if (fresh == 2) launch_empty(st, 1, 32, 1);
                    };
                    const Timing t = fresh ? time_graph(st, [&] { enqueue(b); }, 200, 1, {}, {}, copy_in)
                                           : time_graph(st, [&] { enqueue(b); }, 200);
                    std::printf(" %6.2f", t.kernel_us);
                    std::fflush(stdout);
                }
                std::printf("\n");
            };
            row_of("empty kernel, 7 blocks x 224", [&](int) { launch_empty(st, 7, 224, 1); });
            for (const auto& c : configs) try {
                if ((!c.rows && !c.ksplit) || !selected(c.name)) continue;
                row_of(c.name, [&](int b) { launch(c, x_dev, out_dev, b); });
            } catch (const std::exception& e) {
                std::printf(" ERROR %s\n", e.what());
            }
        }
    }

    // ---------------------------------------------------------------- floors
    if (mode == "all" || mode == "final" || mode == "loads") {
        if (mode != "loads") {  // "loads": the load-rate section only
            std::printf("\n== floors (graph: event, kernel, event; kernel = events, e2e = host launch + sync), median of 2000\n");
            auto row = [](const char* what, Timing t) { std::printf("  %-58s kernel %6.2f us  e2e %6.2f us\n", what, t.kernel_us, t.e2e_us); };
            row("empty kernel, 1 block x 32", time_graph(st, [&] { launch_empty(st, 1, 32, 1); }, 2000));
            if (mode == "all") row("empty kernel, 7 blocks x 448", time_graph(st, [&] { launch_empty(st, 7, 448, 1); }, 2000));
            row("empty kernel, 7 blocks x 448, cluster 7", time_graph(st, [&] { launch_empty(st, 7, 448, 7); }, 2000));
            row("empty kernel, 112 blocks x 448, cluster 7", time_graph(st, [&] { launch_empty(st, 112, 448, 7); }, 2000));
            row("empty kernel, 128 blocks x 224", time_graph(st, [&] { launch_empty(st, 128, 224, 1); }, 2000));
            row("20 empty kernels back to back (per kernel)", time_graph(st, [&] { launch_empty(st, 7, 448, 7); }, 500, 20));
            row("read 3136 B mapped host (196 thr) + write 40 B mapped", time_graph(st, [&] {
                    pcie_kernel<<<1, 224, 0, st>>>(reinterpret_cast<const float4*>(x_map), out_map, 196, 1);
                }, 2000));
            row("read 3136 B device + write 40 B device", time_graph(st, [&] {
                    pcie_kernel<<<1, 224, 0, st>>>(reinterpret_cast<const float4*>(x_dev), out_dev, 196, 1);
                }, 2000));
            row("write 40 B mapped host only", time_graph(st, [&] { write_kernel<<<1, 32, 0, st>>>(out_map); }, 2000));
            row("memcpy node H2D 3136 B, empty kernel, memcpy node D2H 40 B",
                time_graph(st, [&] { launch_empty(st, 1, 32, 1); }, 2000, 1, {}, {},
                           [&] { CUDA_CHECK(cudaMemcpyAsync(x_dev, x_host, 3136, cudaMemcpyHostToDevice, st)); },
                           [&] { CUDA_CHECK(cudaMemcpyAsync(out_host, out_dev, 40, cudaMemcpyDeviceToHost, st)); }));
            row("memcpy node H2D 3136 B, empty kernel, (out mapped)",
                time_graph(st, [&] { launch_empty(st, 1, 32, 1); }, 2000, 1, {}, {},
                           [&] { CUDA_CHECK(cudaMemcpyAsync(x_dev, x_host, 3136, cudaMemcpyHostToDevice, st)); }));

            // latency of single dependent accesses
            {
                const int n = 64;
                unsigned *chain_h, *chain_map, *chain_d, *sink;
                long long *cyc, *cyc_dev;
                CUDA_CHECK(cudaHostAlloc(&chain_h, 4096 * 4, cudaHostAllocMapped));
                CUDA_CHECK(cudaHostGetDevicePointer((void**)&chain_map, chain_h, 0));
                const size_t big = (size_t)256 << 20;  // 1 GB of unsigned: beyond L2
                CUDA_CHECK(cudaMalloc(&chain_d, big * 4));
                CUDA_CHECK(cudaMalloc(&sink, 64));
                CUDA_CHECK(cudaHostAlloc(&cyc, 64, cudaHostAllocMapped));  // read after sync
                CUDA_CHECK(cudaHostGetDevicePointer((void**)&cyc_dev, cyc, 0));
                for (int i = 0; i < 4096; ++i) chain_h[i] = (i + 64 * 7) % 4096;  // 64 steps, different lines
                std::vector<unsigned> hop(4096);
                for (int i = 0; i < 4096; ++i) hop[i] = (i + 97) % 4096;
                CUDA_CHECK(cudaMemcpy(chain_d, hop.data(), 4096 * 4, cudaMemcpyHostToDevice));
                chase_kernel<<<1, 1, 0, st>>>(chain_map, n, sink, cyc_dev);
                CUDA_CHECK(cudaStreamSynchronize(st));
                chase_kernel<<<1, 1, 0, st>>>(chain_map, n, sink, cyc_dev);
                CUDA_CHECK(cudaStreamSynchronize(st));
                const long long host_cyc = cyc[0];
                chase_kernel<<<1, 1, 0, st>>>(chain_d, n, sink, cyc_dev);  // warms L2 with the chain
                CUDA_CHECK(cudaStreamSynchronize(st));
                chase_kernel<<<1, 1, 0, st>>>(chain_d, n, sink, cyc_dev);
                CUDA_CHECK(cudaStreamSynchronize(st));
                const long long l2_cyc = cyc[0];
                // HBM: a chain with ~16 MB hops (fresh lines every time)
                for (int i = 0; i < n + 1; ++i) {
                    const unsigned at = (unsigned)((size_t)i * 3900000u), next = (unsigned)((size_t)(i + 1) * 3900000u);
                    CUDA_CHECK(cudaMemcpy(chain_d + at, &next, 4, cudaMemcpyHostToDevice));
                }
                void* flush;
                CUDA_CHECK(cudaMalloc(&flush, 256 << 20));
                CUDA_CHECK(cudaMemset(flush, 1, 256 << 20));  // evict L2
                chase_kernel<<<1, 1, 0, st>>>(chain_d, n, sink, cyc_dev);
                CUDA_CHECK(cudaStreamSynchronize(st));
                std::printf("  dependent load latency (cycles): mapped host %lld, L2 %lld, HBM %lld\n", host_cyc, l2_cyc, cyc[0]);
                // clock under the same cadence as a batch-1 loop (launch, sync, repeat)
                std::vector<double> mhz;
                for (int i = 0; i < 300; ++i) {
                    clock_kernel<<<1, 1, 0, st>>>(cyc_dev, 20000);
                    CUDA_CHECK(cudaStreamSynchronize(st));
                    mhz.push_back(cyc[1] > 0 ? 1000.0 * cyc[0] / cyc[1] : 0);
                }
                std::printf("  SM clock from clock64 / globaltimer over 20000 cycles, launch-sync cadence: median %.0f MHz (min %.0f, max %.0f)\n",
                            median(mhz), *std::min_element(mhz.begin(), mhz.end()), *std::max_element(mhz.begin(), mhz.end()));
                CUDA_CHECK(cudaFree(flush));
                CUDA_CHECK(cudaFree(chain_d));
                CUDA_CHECK(cudaFreeHost(chain_h));
                CUDA_CHECK(cudaFree(sink));
                CUDA_CHECK(cudaFreeHost(cyc));
            }
        }  // mode != "loads"
        // Loads: in-flight LSU loads vs bulk copies vs multicast; rotation; cluster barrier
        {
            float* sink;
            CUDA_CHECK(cudaMalloc(&sink, 64));
            const double fl = time_graph(st, [&] { launch_empty(st, 1, 32, 1); }, 1000).kernel_us;
            auto bw = [&](const char* what, double bytes_per_block, int blocks, Timing t) {
                std::printf("  %-66s %6.2f us (+%5.2f over empty) = %5.1f GB/s per SM, %5.2f TB/s total\n", what,
                            t.kernel_us, t.kernel_us - fl, bytes_per_block / ((t.kernel_us - fl) * 1e3),
                            bytes_per_block * blocks / ((t.kernel_us - fl) * 1e6));
            };
            const float4* xd4 = reinterpret_cast<const float4*>(x_dev);
            const float4* w14 = reinterpret_cast<const float4*>(fw.w1f);
            bw("LSU 8 in flight, 7 blocks x 448, own 50 KB each", 50176, 7,
               time_graph(st, [&] { ldg8_kernel<<<7, 448, 0, st>>>(xd4, 3136, 0, sink); }, 1000));
            bw("LSU 8 in flight, 14 blocks x 448, own 25 KB each", 25088, 14,
               time_graph(st, [&] { ldg8_kernel<<<14, 448, 0, st>>>(xd4, 1568, 0, sink); }, 1000));
            bw("LSU 8 in flight, 132 blocks x 448, own 96 KB each", 6080 * 16, 132,
               time_graph(st, [&] { ldg8_kernel<<<132, 448, 0, st>>>(xd4, 6080, 0, sink); }, 300));
            bw("LSU 8 in flight, 128 blocks x 448, same 351 KB (W1)", 351232, 128,
               time_graph(st, [&] { ldg8_kernel<<<128, 448, 0, st>>>(w14, 21952, 1, sink); }, 300));
            bw("LSU 8 in flight, 128 blocks x 448, same 351 KB, rotated start", 351232, 128,
               time_graph(st, [&] { ldg8_kernel<<<128, 448, 0, st>>>(w14, 21952, 7, sink); }, 300));
            bw("LSU 8 in flight, 128 blocks x 224, same 351 KB, rotated start", 351232, 128,
               time_graph(st, [&] { ldg8_kernel<<<128, 224, 0, st>>>(w14, 21952, 7, sink); }, 300));
            const char* xc = reinterpret_cast<const char*>(x_dev);
            const char* wc = reinterpret_cast<const char*>(fw.w1f);
            CUDA_CHECK(cudaFuncSetAttribute(bulk_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 196608));
            CUDA_CHECK(cudaFuncSetAttribute(mcast_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 196608));
            bw("bulk copy, 7 blocks, own 49 KB each (1 copy)", 50176, 7,
               time_graph(st, [&] { bulk_kernel<<<7, 128, 50176, st>>>(xc, 50176, 1, 1, sink); }, 1000));
            bw("bulk copy, 14 blocks, own 25 KB each (1 copy)", 25088, 14,
               time_graph(st, [&] { bulk_kernel<<<14, 128, 25088, st>>>(xc, 25088, 1, 1, sink); }, 1000));
            bw("bulk copy, 132 blocks, own 94 KB each (2 copies)", 96256, 132,
               time_graph(st, [&] { bulk_kernel<<<132, 128, 96256, st>>>(xc, 48128, 2, 1, sink); }, 300));
            bw("bulk copy, 128 blocks, same 192 KB of W1 (4 copies)", 196608, 128,
               time_graph(st, [&] { bulk_kernel<<<128, 128, 196608, st>>>(wc, 49152, 4, 0, sink); }, 300));
            for (int C : {2, 4}) {
                const std::string what = "multicast, cluster " + std::to_string(C) + ", 128 blocks, same 192 KB of W1";
                bw(what.c_str(), 196608, 128, time_graph(st, [&] {
                       cudaLaunchAttribute attr[1];
                       const cudaLaunchConfig_t cfg = make_launch_config(dim3(128), dim3(128), 196608, st, C, attr);
                       CUDA_CHECK(cudaLaunchKernelEx(&cfg, mcast_kernel, wc, 49152u, 4, C, sink));
                   }, 300));
            }
            const Timing cb = time_graph(st, [&] { launch_cluster(st, cbar_kernel, 7, 448, 7, 100); }, 300);
            std::printf("  cluster barrier (arrive.release + wait.acquire), cluster of 7 x 448: %.3f us each\n",
                        (cb.kernel_us - fl) / 100);
            const int iters = 4096;
            const Timing t = time_graph(st, [&] { mma_kernel<<<132, 256, 0, st>>>(iters, sink); }, 50);
            const double flops = 132.0 * 8 * iters * 8 * 16 * 8 * 8 * 2;
            std::printf("  mma.sync m16n8k8 tf32, 132 x 8 warps x 8 chains: %.1f us = %.0f TFLOP/s\n", t.kernel_us,
                        flops / (t.kernel_us * 1e-6) / 1e12);
            CUDA_CHECK(cudaFree(sink));
        }
        if (mode == "loads") return 0;
        // Launch and completion alternatives for one small kernel (reads 3136 B mapped, writes 40 B mapped)
        {
            std::printf("\n== launch / completion alternatives (small kernel: 3136 B mapped in, 40 B mapped out), median of 2000\n");
            const float4* xm4 = reinterpret_cast<const float4*>(x_map);
            auto k = [&] { pcie_kernel<<<1, 224, 0, st>>>(xm4, out_map, 196, 1); };
            Timing t = time_graph(st, k, 2000);
            std::printf("  V1 graph [event, kernel, event] + cudaStreamSynchronize:      kernel %5.2f  e2e %5.2f us\n", t.kernel_us, t.e2e_us);
            auto host_loop = [](const std::function<void()>& call) { return host_median_us(call, 2000, 100); };
            {
                cudaGraphExec_t ge = capture_exec(st, k);
                std::printf("  V2 graph [kernel] + cudaStreamSynchronize:                              e2e %5.2f us\n",
                            host_loop([&] { CUDA_CHECK(cudaGraphLaunch(ge, st)); CUDA_CHECK(cudaStreamSynchronize(st)); }));
                std::printf("  V7 cudaGraphLaunch alone (host call, then sync untimed):                e2e %5.2f us\n", [&] {
                    std::vector<double> es;
                    for (int i = 0; i < 2100; ++i) {
                        const auto t0 = clk::now();
                        CUDA_CHECK(cudaGraphLaunch(ge, st));
                        const auto t1 = clk::now();
                        CUDA_CHECK(cudaStreamSynchronize(st));
                        if (i >= 100) es.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
                    }
                    return median(es);
                }());
                CUDA_CHECK(cudaGraphExecDestroy(ge));
            }
            std::printf("  V3 direct launch + cudaStreamSynchronize:                               e2e %5.2f us\n",
                        host_loop([&] { k(); CUDA_CHECK(cudaStreamSynchronize(st)); }));
            {
                cudaEvent_t e0, e1;
                CUDA_CHECK(cudaEventCreate(&e0));
                CUDA_CHECK(cudaEventCreate(&e1));
                unsigned *flag_h, *flag_d;
                CUDA_CHECK(cudaHostAlloc(&flag_h, 64, cudaHostAllocMapped));
                CUDA_CHECK(cudaHostGetDevicePointer((void**)&flag_d, flag_h, 0));
                for (int variant = 0; variant < 2; ++variant) {
                    cudaGraph_t g;
                    cudaGraphExec_t ge;
                    CUDA_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeRelaxed));
                    CUDA_CHECK(cudaEventRecordWithFlags(e0, st, cudaEventRecordExternal));
                    if (variant == 0) k();
                    else flag_kernel<<<1, 224, 0, st>>>(xm4, out_map, flag_d);
                    CUDA_CHECK(cudaEventRecordWithFlags(e1, st, cudaEventRecordExternal));
                    CUDA_CHECK(cudaStreamEndCapture(st, &g));
                    CUDA_CHECK(cudaGraphInstantiate(&ge, g, 0));
                    std::vector<double> es, es2, ks;
                    for (int i = 0; i < 2100; ++i) {
                        *(volatile unsigned*)flag_h = 0;
                        const auto t0 = clk::now();
                        CUDA_CHECK(cudaGraphLaunch(ge, st));
                        if (variant == 0) {
                            while (cudaEventQuery(e1) == cudaErrorNotReady) {
                            }
                        } else {
                            while (*(volatile unsigned*)flag_h == 0) {
                            }
                        }
                        const auto t1 = clk::now();
                        CUDA_CHECK(cudaEventSynchronize(e1));
                        const auto t2 = clk::now();
                        float ms = 0;
                        CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
                        if (i >= 100)
                            es.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count()),
                                es2.push_back(std::chrono::duration<double, std::micro>(t2 - t0).count()), ks.push_back(ms * 1e3);
                    }
                    std::printf("  %s kernel %5.2f  e2e %5.2f us (to the event too: %5.2f)\n",
                                variant == 0 ? "V4 graph [event, kernel, event], spin on cudaEventQuery:"
                                             : "V5 graph [event, kernel, event], spin on a mapped flag: ",
                                median(ks), median(es), median(es2));
                    CUDA_CHECK(cudaGraphExecDestroy(ge));
                    CUDA_CHECK(cudaGraphDestroy(g));
                }
                // V6: x travels as a kernel parameter (3136 B), updated in the executable graph each call
                {
                    static ToyParam xp;
                    std::memcpy(xp.x, x_all.data(), sizeof(xp.x));
                    cudaGraph_t g;
                    cudaGraphExec_t ge;
                    CUDA_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeRelaxed));
                    CUDA_CHECK(cudaEventRecordWithFlags(e0, st, cudaEventRecordExternal));
                    param_kernel<<<1, 224, 0, st>>>(xp, out_map);
                    CUDA_CHECK(cudaEventRecordWithFlags(e1, st, cudaEventRecordExternal));
                    CUDA_CHECK(cudaStreamEndCapture(st, &g));
                    size_t n = 0;
                    CUDA_CHECK(cudaGraphGetNodes(g, nullptr, &n));
                    std::vector<cudaGraphNode_t> nodes(n);
                    CUDA_CHECK(cudaGraphGetNodes(g, nodes.data(), &n));
                    cudaGraphNode_t kn = nullptr;
                    for (auto nd : nodes) {
                        cudaGraphNodeType ty;
                        CUDA_CHECK(cudaGraphNodeGetType(nd, &ty));
                        if (ty == cudaGraphNodeTypeKernel) kn = nd;
                    }
                    cudaKernelNodeParams kp{};
                    CUDA_CHECK(cudaGraphKernelNodeGetParams(kn, &kp));
                    CUDA_CHECK(cudaGraphInstantiate(&ge, g, 0));
                    float* om = out_map;
                    void* args[] = {&xp, &om};
                    kp.kernelParams = args;
                    kp.extra = nullptr;
                    std::vector<double> es, ks;
                    for (int i = 0; i < 2100; ++i) {
                        const auto t0 = clk::now();
                        xp.x[i % 784] += 1.0f;
                        CUDA_CHECK(cudaGraphExecKernelNodeSetParams(ge, kn, &kp));
                        CUDA_CHECK(cudaGraphLaunch(ge, st));
                        CUDA_CHECK(cudaStreamSynchronize(st));
                        const auto t1 = clk::now();
                        float ms = 0;
                        CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
                        if (i >= 100) es.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count()), ks.push_back(ms * 1e3);
                    }
                    std::printf("  V6 x as a kernel parameter, cudaGraphExecKernelNodeSetParams + launch + sync: kernel %5.2f  e2e %5.2f us\n",
                                median(ks), median(es));
                    CUDA_CHECK(cudaGraphExecDestroy(ge));
                    CUDA_CHECK(cudaGraphDestroy(g));
                }
                CUDA_CHECK(cudaEventDestroy(e0));
                CUDA_CHECK(cudaEventDestroy(e1));
                CUDA_CHECK(cudaFreeHost(flag_h));
            }
        }
        std::fflush(stdout);
    }

    // ---------------------------------------------------------------- kernel timing
    if (mode == "all") {
        const int tb[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096};
        std::printf("\n== kernel time (us, events around one graph-launched kernel, x + out in device memory, median of 300)\n");
        std::printf("  %-32s", "config");
        for (int b : tb) std::printf(" %6d", b);
        std::printf("\n");
        for (const auto& c : configs) try {
            if (!c.rows && !c.cluster && c.cols == 8) continue;
            std::printf("  %-32s", c.name.c_str());
            for (int b : tb) {
                const bool skip = (!c.rows && c.engine == Engine::Fma && b > 512) || (!c.rows && b > 1024) || (c.rows && b < 128);
                if (skip) {
                    std::printf(" %6s", "-");
                    continue;
                }
                const Timing t = time_graph(st, [&] { launch(c, x_dev, out_dev, b); }, b >= 1024 ? 100 : 300);
                std::printf(" %6.2f", t.kernel_us);
                std::fflush(stdout);
            }
            std::printf("\n");
        } catch (const std::exception& e) {
            std::printf(" ERROR %s\n", e.what());
        }
        std::printf("\n== the same, x read from / probabilities written to mapped host memory (batches 1, 2, 4, 16)\n");
        for (const auto& c : configs) try {
            if (c.rows || !c.cluster || c.bm > 2) continue;
            std::printf("  %-32s", c.name.c_str());
            for (int b : {1, 2, 4, 16}) std::printf(" %6.2f", time_graph(st, [&] { launch(c, x_map, out_map, b); }, 300).kernel_us);
            std::printf("\n");
        } catch (const std::exception& e) {
            std::printf(" ERROR %s\n", e.what());
        }
        std::printf("\n== back to back: 20 launches between two events (per launch), x + out in device memory\n");
        for (const auto& nb : std::vector<std::pair<std::string, int>>{
                 {"split bm1 fma c16 +cl", 1}, {"split bm1 fma c8 +cl", 1}, {"split bm16 3xtf32 c16 -cl", 256},
                 {"rows bm32 w7 rot 3xtf32", 4096}, {"rows bm32 w7 rot tf32", 4096}}) {
            const Config& c = find(nb.first);
            const int b = nb.second;
            std::printf("  %-32s batch %4d: %.2f us\n", c.name.c_str(), b,
                        time_graph(st, [&] { launch(c, x_dev, out_dev, b); }, 100, 20).kernel_us);
        }
        std::fflush(stdout);
    }

    // ---------------------------------------------------------------- x staging for large batches (C++)
    if (mode == "staging") {
        const size_t mb = size_t{1} << 20, bytes = x_all.size() * sizeof(float);
        auto host_us = [](const std::function<void()>& f, int reps) { return host_median_us(f, reps, 3); };
        std::printf("\n== x staging, %d rows (%.1f MB), host clock us, median of 30; %u hardware threads\n", kMax,
                    bytes / 1e6, std::thread::hardware_concurrency());
        std::printf("  host copy into pinned memory, one thread: %8.1f\n",
                    host_us([&] { std::memcpy(x_host, x_all.data(), bytes); }, 30));
        std::printf("  DMA from pinned memory (cudaMemcpy):      %8.1f\n",
                    host_us([&] { CUDA_CHECK(cudaMemcpy(x_dev, x_host, bytes, cudaMemcpyHostToDevice)); }, 30));
        std::printf("  DMA from pageable memory (cudaMemcpy):    %8.1f\n",
                    host_us([&] { CUDA_CHECK(cudaMemcpy(x_dev, x_all.data(), bytes, cudaMemcpyHostToDevice)); }, 30));
        // Where the time goes: a copy of stage_chunked (staging.cu) with stamps, 4096 rows, us after entry; its
        // helper threads are spawned per call, as before stage_chunked kept them in a StagingPool.
        {
            float* dev_x = x_dev;
            const char* src = reinterpret_cast<const char*>(x_all.data());
            char* pinned = reinterpret_cast<char*>(x_host);
            for (bool nt : {false, true})
            for (int threads : {1, 2, 4, 8})
                for (size_t chunk : {mb, 2 * mb}) {
                    if (threads == 1 && chunk > mb) continue;
                    const size_t chunks = (bytes + chunk - 1) / chunk;
                    std::vector<double> spawn_v, copy_v, join_v, sync_v, busy_v;
                    for (int rep = 0; rep < 23; ++rep) {
                        std::atomic<size_t> next{0};
                        std::vector<double> busy(threads, 0.0);
                        const auto t0 = clk::now();
                        auto us = [&](clk::time_point t) { return std::chrono::duration<double, std::micro>(t - t0).count(); };
                        auto work = [&](int t) {
                            if (t > 0) cudaSetDevice(0);
                            for (size_t c; (c = next.fetch_add(1)) < chunks;) {
                                const auto a = clk::now();
                                const size_t off = c * chunk, len = std::min(chunk, bytes - off);
                                if (nt) copy_streaming(pinned + off, src + off, len);
                                else std::memcpy(pinned + off, src + off, len);
                                busy[t] += std::chrono::duration<double, std::micro>(clk::now() - a).count();
                                cudaMemcpyAsync(reinterpret_cast<char*>(dev_x) + off, pinned + off, len, cudaMemcpyHostToDevice, st);
                            }
                        };
                        std::vector<std::thread> pool;
                        for (int t = 1; t < threads; ++t) pool.emplace_back(work, t);
                        const double t_spawn = us(clk::now());
                        work(0);
                        const double t_copy = us(clk::now());
                        for (auto& h : pool) h.join();
                        const double t_join = us(clk::now());
                        CUDA_CHECK(cudaStreamSynchronize(st));
                        const double t_sync = us(clk::now());
                        if (rep < 3) continue;
                        spawn_v.push_back(t_spawn), copy_v.push_back(t_copy), join_v.push_back(t_join), sync_v.push_back(t_sync);
                        busy_v.push_back(*std::max_element(busy.begin(), busy.end()));
                    }
                    std::printf("  replica %s %d threads, %4zu KB chunks: spawned %6.1f, own chunks done %6.1f, joined %6.1f, "
                                "DMA done %6.1f; busiest thread copying %6.1f\n",
                                nt ? "stream" : "memcpy", threads, chunk >> 10, median(spawn_v), median(copy_v), median(join_v), median(sync_v),
                                median(busy_v));
                }
            // host copy alone, over n threads (each a contiguous 1/n)
            for (bool nt : {false, true})
            for (int threads : {1, 2, 4, 8}) {
                std::printf("  host copy alone (%s), %d threads: %6.1f\n", nt ? "stream" : "memcpy", threads, host_us([&] {
                    std::vector<std::thread> pool;
                    auto part = [&](int t) {
                        const size_t a = bytes * t / threads, b = bytes * (t + 1) / threads;
                        if (nt) copy_streaming(pinned + a, src + a, b - a);
                        else std::memcpy(pinned + a, src + a, b - a);
                    };
                    for (int t = 1; t < threads; ++t) pool.emplace_back(part, t);
                    part(0);
                    for (auto& h : pool) h.join();
                }, 20));
            }
            std::printf("  DMA alone, 1 MB pieces queued then synced: %6.1f\n", host_us([&] {
                for (size_t off = 0; off < bytes; off += mb)
                    CUDA_CHECK(cudaMemcpyAsync(reinterpret_cast<char*>(dev_x) + off, pinned + off, std::min(mb, bytes - off),
                                               cudaMemcpyHostToDevice, st));
                CUDA_CHECK(cudaStreamSynchronize(st));
            }, 20));
        }
        std::printf("\n== Mlp::forward end to end per staging policy (cuda.mlp_fused_tf32, C++ clock, us, median of 200)\n");
        const std::vector<int> sb = {128, 256, 384, 512, 1024, 2048, 4096};
        std::printf("  %-26s", "policy");
        for (int b : sb) std::printf(" %8d", b);
        std::printf("\n");
        std::vector<float> out((size_t)kMax * 10);
        const std::vector<std::pair<std::string, Mlp::Staging>> policies = {
            {"one copy + one DMA", {SIZE_MAX, mb, 1}},  {"1 MB chunks, 1 thread", {0, mb, 1}},
            {"1 MB chunks, 2 threads", {0, mb, 2}},      {"1 MB chunks, 4 threads", {0, mb, 4}},
            {"1 MB chunks, 8 threads", {0, mb, 8}},      {"512 KB chunks, 4 threads", {0, mb / 2, 4}},
            {"2 MB chunks, 4 threads", {0, 2 * mb, 4}},  {"default", Mlp::default_staging()}};
        for (const auto& [name, policy] : policies) {
            mlp.set_staging(policy);
            std::printf("  %-26s", name.c_str());
            for (int b : sb) {
                const ForwardTimes t =
                    time_forward(mlp, "cuda.mlp_fused_tf32", x_all.data(), out.data(), ref_all.data(), b, 200, 20);
                std::printf(" %8.1f%s", t.e2e_us, t.error <= 5e-3 ? "" : " WRONG");
                std::fflush(stdout);
            }
            std::printf("\n");
        }
        std::printf("\nprobe done\n");
        return 0;
    }

    // ---------------------------------------------------------------- Mlp::forward end to end (C++)
    {
        std::printf("\n== Mlp::forward (C++ host clock, no Python), kernel / e2e us, median of 2000 (300 at >= 256)\n");
        std::vector<float> out((size_t)kMax * 10);
        auto e2e = [&](const char* k, int b, int reps) {
            const ForwardTimes t = time_forward(mlp, k, x_all.data(), out.data(), ref_all.data(), b, reps, 100);
            std::printf("  %5d: %6.2f / %7.2f%s", b, t.kernel_us, t.e2e_us,
                        t.error <= (std::string(k) == "cuda.mlp_fused_tf32" ? 5e-3 : 1e-5) ? "" : " WRONG");
            std::fflush(stdout);
        };
        for (const char* k : {"cuda.mlp_fused", "cuda.mlp_fused_tf32", "cuda.mlp_fused_3xtf32"}) {
            std::printf("  %-22s default plans and I/O:\n   ", k);
            int n = 0;
            const std::vector<int> fb = mode == "rows" ? std::vector<int>{512, 1024, 2048, 4096}
                                                       : std::vector<int>{1, 2, 4, 8, 16, 32, 64, 128, 256, 384, 512, 1024, 2048, 4096};
            for (int b : fb) {
                try {
                    e2e(k, b, b >= 256 ? 300 : 2000);
                } catch (const std::exception& ex) {
                    std::printf("  %5d: ERROR %s", b, ex.what());
                }
                if (++n % 5 == 0) std::printf("\n   ");
            }
            std::printf("\n");
        }
        if (mode == "rows") {
            std::printf("\nprobe done\n");
            return 0;
        }
        std::printf("\n== cuda.mlp_fused: x mapped (read by slices over the cluster) or copied, per plan (kernel / e2e us, C++)\n");
        for (int in_max : {64, 0}) {
            mlp.set_io_policy(in_max, 64);
            std::printf("  x %s, default plans:\n   ", in_max ? "mapped" : "copied");
            for (int b : {1, 2, 4, 16, 64}) e2e("cuda.mlp_fused", b, 2000);
            std::printf("\n");
            for (const char* pname : {"split bm1 fma c8 +cl", "split bm1 fma c16 +cl", "split bm1 fma c16 -cl"}) {
                const FusedPlan pl = plan_of(find(pname));
                set_fused_plan_override(&pl);
                std::printf("  x %s %-24s", in_max ? "mapped" : "copied", pname);
                try {
                    e2e("cuda.mlp_fused", 1, 3000);
                } catch (const std::exception& ex) {
                    std::printf(" ERROR %s", ex.what());
                }
                std::printf("\n");
            }
            set_fused_plan_override(nullptr);
        }
        mlp.set_io_policy(64, 64);
    }
    std::printf("\nprobe done\n");
    return 0;
}
