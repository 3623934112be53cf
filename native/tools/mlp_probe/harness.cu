// The probe's harness: the measuring helpers, the setup every mode shares (Probe), and main(),
// which runs the modes in the order they always ran. What each mode measures: its file.
#include "probe.cuh"

namespace probe {
namespace {

__global__ void empty_kernel() {}

}  // namespace

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

// Digit-like rows (80% zeros), row 0 dense, last row blank (as tests/native/test_cuda_mlp.py).
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


// Medians over `reps` calls of `call`, after 50 untimed ones: the span between the events e0 and
// e1 that it records (divided by `inner`), and its host time. It returns with both complete.
Timing time_calls(cudaEvent_t e0, cudaEvent_t e1, const std::function<void()>& call, int reps, int inner) {
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
Timing time_graph(cudaStream_t st, const std::function<void()>& enqueue, int reps, int inner,
                  const std::function<void()>& before, const std::function<void()>& after,
                  const std::function<void()>& pre, const std::function<void()>& post) {
    cudaEvent_t e0, e1;
    CUDA_CHECK(cudaEventCreate(&e0));
    CUDA_CHECK(cudaEventCreate(&e1));
    const Graph graph = Graph::capture(st, cudaStreamCaptureModeRelaxed, [&] {
        if (pre) pre();
        CUDA_CHECK(cudaEventRecordWithFlags(e0, st, cudaEventRecordExternal));
        for (int i = 0; i < inner; ++i) enqueue();
        CUDA_CHECK(cudaEventRecordWithFlags(e1, st, cudaEventRecordExternal));
        if (post) post();
    });
    const Timing t = time_calls(e0, e1, [&] {
        if (before) before();
        graph.launch(st);
        CUDA_CHECK(cudaStreamSynchronize(st));
        if (after) after();
    }, reps, inner);
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
    const Graph graph = Graph::capture(st, cudaStreamCaptureModeRelaxed, enqueue);
    return time_stream(st, [&] { graph.launch(st); }, reps);
}

void launch_empty(cudaStream_t st, int blocks, int threads, int cluster) {
    cudaLaunchAttribute attr[1];
    const cudaLaunchConfig_t cfg = make_launch_config(dim3(blocks), dim3(threads), 0, st, cluster, attr);
    CUDA_CHECK(cudaLaunchKernelEx(&cfg, empty_kernel));
}

void allow_empty_clusters_of_14() {
    CUDA_CHECK(cudaFuncSetAttribute(empty_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
}

Probe::Probe(std::string mode_) : mode(std::move(mode_)) {
    CUDA_CHECK(cudaSetDevice(0));
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    int drv = 0;
    CUDA_CHECK(cudaDriverGetVersion(&drv));
    std::printf("device %s, %d SMs, L2 %d MB, smem/block optin %zu KB, driver API %d\n", prop.name,
                prop.multiProcessorCount, prop.l2CacheSize >> 20, prop.sharedMemPerBlockOptin >> 10, drv);
    CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    std::mt19937 rng(1234);
    model = random_model(rng);
    mlp = std::make_unique<Mlp>(model.W1.data(), model.b1.data(), model.W2.data(), model.b2.data(), model.W3.data(), model.b3.data());
    x_all = inputs(rng, kMax);
    std::printf("reference (float64, %d rows)...\n", kMax);
    std::fflush(stdout);
    ref_all = reference(model, x_all, kMax);

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
    fw = mlp->fused_weights();
    fs = FusedScratch{partials, counters};

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
}

FusedPlan Probe::plan_of(const Config& c) {
    FusedPlan p;
    p.design = c.ksplit ? FusedPlan::KSplit : c.rows ? FusedPlan::Rows : FusedPlan::Split;
    p.bm = c.bm;
    p.engine = c.engine;
    p.cols = c.cols;
    p.cluster = c.cluster;
    p.x_slices = c.x_slices;
    p.tma_x = c.tma_x;
    return p;
}

void Probe::launch(const Config& c, const float* x, float* out, int batch) {
    set_fused_clusters(true);  // sm_90 features on; plan.cluster picks the split kernel's path
    launch_fused(plan_of(c), fw, x, out, batch, fs, st);
}

const Config& Probe::find(const std::string& name) const {
    for (const auto& c : configs)
        if (c.name == name) return c;
    throw std::runtime_error("no config " + name);
}

// PROBE_FILTER="a|b|c": only configs whose name contains one of the parts (for the slow sanitizers,
// and A/B runs of one kernel)
bool Probe::selected(const std::string& name) const {
    const char* filter = std::getenv("PROBE_FILTER");
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
}

}  // namespace probe

int main(int argc, char** argv) {
    probe::Probe p(argc > 1 ? argv[1] : "all");
    const std::string& mode = p.mode;
    if (mode == "floors") return p.floors();
    if (mode == "ncu") return p.ncu();
    if (mode == "trace") return p.trace();
    if (mode == "all" || mode == "check" || mode == "final" || mode == "rows") {
        const int failures = p.check();
        if (mode == "check") return failures ? 1 : 0;
    }
    if (mode == "rows") p.rows();
    if (mode == "all" || mode == "final" || mode == "loads") {
        p.loads();
        if (mode == "loads") return 0;
    }
    if (mode == "all") p.kernels();
    if (mode == "staging") return p.staging();
    return p.forward();
}
