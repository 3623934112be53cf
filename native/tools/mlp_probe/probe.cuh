// mlp_probe: the fused MLP kernels without Python, for one device call that answers "where does the
// time go". This header is the harness every mode shares: the setup (a random model, inputs and
// their float64 reference, device and mapped buffers, every kernel configuration) in `Probe`, and
// the measuring helpers. Each mode is one file beside it; harness.cu holds main().
//
//   nvcc -O3 -std=c++17 -arch=sm_90a --expt-relaxed-constexpr -Inative/include -Inative/cuda/mlp \
//        native/tools/mlp_probe/*.cu native/cuda/mlp/*.cu native/cuda/support/support.cu native/cuda/gemm/splitk.cu -o /tmp/mlp_probe \
//     && /tmp/mlp_probe [all|final|check|rows|staging|loads|floors|ncu|trace]
// (native/tools/mlp_probe.sh builds it that way, in parallel, and runs it on the GPU machine.)
// Mode "trace" needs mlp_probe.sh's trace build (per-phase globaltimer stamps: mlp_trace.cuh).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "fused_common.cuh"

namespace probe {

using namespace gemmpad::cuda;
using clk = std::chrono::steady_clock;

double median(std::vector<double> v);
// Median host-clock microseconds of `reps` calls of f after `warmup` untimed ones.
double host_median_us(const std::function<void()>& f, int reps, int warmup);

struct Model {
    std::vector<float> W1, b1, W2, b2, W3, b3;
};
Model random_model(std::mt19937& rng);
// Digit-like rows (80% zeros), row 0 dense, last row blank (as tests/native/test_cuda_mlp.py).
std::vector<float> inputs(std::mt19937& rng, int batch);
std::vector<double> reference(const Model& m, const std::vector<float>& x, int batch);
// ||out - ref|| / ||ref||, NaN (unwritten) -> inf
double rel_error(const float* out, const double* ref, int batch);

// Mlp::forward on the first `batch` rows of x, `reps` times after `warmup` untimed calls, the
// output poisoned before each: medians of kernel and end-to-end time, and the last output's error.
struct ForwardTimes {
    double kernel_us, e2e_us, error;
};
ForwardTimes time_forward(Mlp& mlp, const char* kernel, const float* x, float* out, const double* ref, int batch,
                          int reps, int warmup);

struct Timing {
    double kernel_us, e2e_us;
};
// Medians over `reps` calls of `call`, after 50 untimed ones: the span between the events e0 and
// e1 that it records (divided by `inner`), and its host time.
Timing time_calls(cudaEvent_t e0, cudaEvent_t e1, const std::function<void()>& call, int reps, int inner = 1);
// Kernel time of `enqueue` (events inside a graph, as Mlp does) and host time of launch + sync.
Timing time_graph(cudaStream_t st, const std::function<void()>& enqueue, int reps, int inner = 1,
                  const std::function<void()>& before = {}, const std::function<void()>& after = {},
                  const std::function<void()>& pre = {}, const std::function<void()>& post = {});
// The same measure without a graph: events recorded on the stream around a direct launch.
Timing time_stream(cudaStream_t st, const std::function<void()>& enqueue, int reps);
// A graph of the kernel alone, the events recorded on the stream around its launch.
Timing time_graph_outside(cudaStream_t st, const std::function<void()>& enqueue, int reps);

// An empty kernel of `blocks` x `threads` in clusters of `cluster` (1: none).
void launch_empty(cudaStream_t st, int blocks, int threads, int cluster);
// Lets the empty kernel launch in clusters of 14 (non-portable size).
void allow_empty_clusters_of_14();

// One configuration of the fused kernels, as a FusedPlan to force (Probe::plan_of).
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

// The state every mode reads, and the modes (one file each).
struct Probe {
    static constexpr int kMax = 4096;  // rows of x and of the reference
    std::string mode;
    cudaStream_t st = nullptr;
    Model model;
    std::unique_ptr<Mlp> mlp;
    std::vector<float> x_all;
    std::vector<double> ref_all;
    float *x_dev = nullptr, *out_dev = nullptr, *x_host = nullptr, *out_host = nullptr, *x_map = nullptr,
          *out_map = nullptr, *partials = nullptr;
    unsigned* counters = nullptr;
    FusedWeights fw{};
    FusedScratch fs{};
    std::vector<Config> configs;  // every variant the kernels offer

    explicit Probe(std::string mode);
    static FusedPlan plan_of(const Config& c);
    void launch(const Config& c, const float* x, float* out, int batch);  // the plan forced, on st
    const Config& find(const std::string& name) const;
    bool selected(const std::string& name) const;  // PROBE_FILTER, and "rows" mode's subset

    int floors();
    int ncu();
    int trace();
    int check();  // failures
    void rows();
    void loads();
    void kernels();
    int staging();
    int forward();
};

}  // namespace probe
