// Trainer: owns the device buffers, launches a step's kernels and captures an
// epoch into a CUDA graph. Kernels: see train.cuh and the step files it names.
#include <algorithm>
#include <string>
#include <stdexcept>

#include "train.cuh"
#include "trainer.h"

namespace gemmpad::cuda::train {

namespace {
constexpr size_t kSizes[6] = {(size_t)IN * H1, H1, (size_t)H1 * H2, H2, (size_t)H2 * OUT, OUT};

// Row indices index the dataset on the device: one out of range would read past it.
void check_indices(const int32_t* idx, int count, int n) {
    for (int i = 0; i < count; ++i)
        if (idx[i] < 0 || idx[i] >= n)
            throw std::invalid_argument("row index " + std::to_string(idx[i]) + " at position " + std::to_string(i) +
                                        " is outside the dataset of " + std::to_string(n) + " rows");
}

}  // namespace

struct Trainer::Impl {
    DeviceState s{};
    bool mixed = false;
    std::vector<DeviceBuffer> allocations;
    cudaStream_t stream = nullptr;
    cudaEvent_t start = nullptr, stop = nullptr;
    Graph graph;
    int persistent_grid = -1;  // epoch_persistent_grid(), asked on the first persistent epoch

    template <class T>
    T* alloc(size_t count) {
        DeviceBuffer b;
        void* p = b.reserve(count * sizeof(T) + 16);
        allocations.push_back(b);
        // in the stream's order: the copies and kernels that follow run on `stream`, which does not wait
        // for the legacy stream (cudaMemset may land after them)
        CUDA_CHECK(cudaMemsetAsync(p, 0, count * sizeof(T) + 16, stream));
        return static_cast<T*>(p);
    }
    void drop(const void* p) {  // one allocation, before the object ends (its work on `stream` done)
        auto it = std::find_if(allocations.begin(), allocations.end(), [&](const DeviceBuffer& b) { return b.ptr == p; });
        it->release();
        allocations.erase(it);
    }

    ~Impl() {  // best effort, never throws: may run while unwinding a failed constructor
        graph.reset();
        if (start) cudaEventDestroy(start);
        if (stop) cudaEventDestroy(stop);
        if (stream) cudaStreamDestroy(stream);
        for (DeviceBuffer& b : allocations) b.release();
    }

    float* param(int i) const {
        float* const p[6] = {s.w1, s.b1, s.w2, s.b2, s.w3, s.b3};
        return p[i];
    }
    float* velocity(int i) const {
        float* const v[6] = {s.v_w1, s.v_b1, s.v_w2, s.v_b2, s.v_w3, s.v_b3};
        return v[i];
    }

    void launch_step(int offset, int rows) {
        if (mixed) {
            launch_forward_l1_bf16(s, offset, rows, stream);
            launch_rows(s, offset, rows, true, stream);
            launch_grad_update_bf16(s, offset, rows, stream);
        } else {
            launch_forward_l1_fp32(s, offset, rows, stream);
            launch_rows(s, offset, rows, false, stream);
            launch_grad_update_fp32(s, offset, rows, stream);
        }
    }

    void launch_epoch() {
        for (int offset = 0; offset < s.n; offset += s.batch) launch_step(offset, std::min(s.batch, s.n - offset));
        launch_epoch_sums(s, stream);
    }

    int persistent_grid_size() {
        if (persistent_grid < 0) persistent_grid = epoch_persistent_grid();
        return persistent_grid;
    }

    void launch_epoch_persistent() {  // fp32 (Trainer::epoch checks)
        if (persistent_grid_size() == 0)
            throw std::runtime_error("this GPU cannot run the persistent epoch (it needs cooperative launch, "
                                     "120 SMs and 166 KB of shared memory a block): use the graph engine");
        train::launch_epoch_persistent(s, persistent_grid, stream);
        launch_epoch_sums(s, stream);
    }

    void upload_hyper(const Hyper& h) {
        CUDA_CHECK(cudaMemcpyAsync(const_cast<Hyper*>(s.hyper), &h, sizeof(Hyper), cudaMemcpyHostToDevice, stream));
    }
};

Trainer::Trainer(const float* x, const int32_t* labels, int n, const std::vector<const float*>& params, int batch,
                 bool mixed, const float* targets)
    : impl_(std::make_unique<Impl>()) {
    if (n < 1) throw std::invalid_argument("the dataset is empty");
    if (batch < 1) throw std::invalid_argument("batch size must be >= 1");
    if (params.size() != 6) throw std::invalid_argument("expected 6 parameter arrays (W1 b1 W2 b2 W3 b3)");
    Impl& m = *impl_;
    DeviceState& s = m.s;
    m.mixed = mixed;
    s.n = n;
    s.batch = batch < n ? batch : n;
    s.batch_pad = (s.batch + 15) / 16 * 16;
    CUDA_CHECK(cudaStreamCreateWithFlags(&m.stream, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreate(&m.start));
    CUDA_CHECK(cudaEventCreate(&m.stop));
    setup_rows_kernel();

    const size_t xcount = (size_t)n * IN;
    float* xdev = m.alloc<float>(xcount);
    CUDA_CHECK(cudaMemcpyAsync(xdev, x, xcount * sizeof(float), cudaMemcpyHostToDevice, m.stream));
    if (mixed) {
        __nv_bfloat16* xb = m.alloc<__nv_bfloat16>(xcount);
        launch_x_to_bf16(xdev, xb, xcount, m.stream);
        CUDA_CHECK(cudaStreamSynchronize(m.stream));
        m.drop(xdev);  // mixed mode reads only the bf16 copy
        s.xb = xb;
    } else {
        s.x = xdev;
    }
    int32_t* lab = m.alloc<int32_t>(n);
    CUDA_CHECK(cudaMemcpyAsync(lab, labels, n * sizeof(int32_t), cudaMemcpyHostToDevice, m.stream));
    s.labels = lab;
    if (targets) {
        float* q = m.alloc<float>((size_t)n * OUT);
        CUDA_CHECK(cudaMemcpyAsync(q, targets, (size_t)n * OUT * sizeof(float), cudaMemcpyHostToDevice, m.stream));
        s.targets = q;
    }
    s.perm = m.alloc<int32_t>(n);
    s.hyper = m.alloc<Hyper>(1);

    float* p[6];
    float* v[6];
    for (int i = 0; i < 6; ++i) {
        p[i] = m.alloc<float>(kSizes[i]);
        v[i] = m.alloc<float>(kSizes[i]);
        CUDA_CHECK(cudaMemcpyAsync(p[i], params[i], kSizes[i] * sizeof(float), cudaMemcpyHostToDevice, m.stream));
    }
    s.w1 = p[0]; s.b1 = p[1]; s.w2 = p[2]; s.b2 = p[3]; s.w3 = p[4]; s.b3 = p[5];
    s.v_w1 = v[0]; s.v_b1 = v[1]; s.v_w2 = v[2]; s.v_b2 = v[3]; s.v_w3 = v[4]; s.v_b3 = v[5];

    s.part = m.alloc<float>((size_t)(mixed ? KSLICES : W1_KTILES) * s.batch_pad * PN);
    s.h1 = m.alloc<float>((size_t)s.batch * H1);
    s.h2 = m.alloc<float>((size_t)s.batch * H2);
    s.dz1 = m.alloc<float>((size_t)s.batch * H1);
    s.dz2 = m.alloc<float>((size_t)s.batch * H2);
    s.dz3 = m.alloc<float>((size_t)s.batch * OUT);
    if (mixed) {
        s.w1b = m.alloc<__nv_bfloat16>((size_t)IN * PN);
        s.dz1b = m.alloc<__nv_bfloat16>((size_t)s.batch_pad * PN);
        launch_w1_to_bf16(s, m.stream);
    }
    s.loss = m.alloc<float>(n);
    s.correct = m.alloc<float>(n);
    s.epoch_sums = m.alloc<float>(2);
    CUDA_CHECK(cudaStreamSynchronize(m.stream));
}

Trainer::~Trainer() = default;

EpochResult Trainer::epoch(const int32_t* perm, const Hyper& hyper, Engine engine) {
    Impl& m = *impl_;
    if (engine == Engine::persistent && m.mixed)
        throw std::invalid_argument("the persistent engine trains fp32 only (mixed precision: the graph)");
    if (engine == Engine::persistent && m.s.batch > PERSISTENT_MAX_BATCH)
        throw std::invalid_argument("the persistent engine takes batches of at most " +
                                    std::to_string(PERSISTENT_MAX_BATCH) + " rows (larger ones: the graph)");
    check_indices(perm, m.s.n, m.s.n);
    CUDA_CHECK(cudaMemcpyAsync(const_cast<int32_t*>(m.s.perm), perm, (size_t)m.s.n * sizeof(int32_t),
                               cudaMemcpyHostToDevice, m.stream));
    m.upload_hyper(hyper);
    if (engine == Engine::graph && !m.graph)
        m.graph = Graph::capture(m.stream, cudaStreamCaptureModeThreadLocal, [&] { m.launch_epoch(); });
    CUDA_CHECK(cudaEventRecord(m.start, m.stream));
    if (engine == Engine::graph) m.graph.launch(m.stream);
    else if (engine == Engine::persistent) m.launch_epoch_persistent();
    else m.launch_epoch();
    CUDA_CHECK(cudaEventRecord(m.stop, m.stream));
    float sums[2] = {0.f, 0.f};
    CUDA_CHECK(cudaMemcpyAsync(sums, m.s.epoch_sums, sizeof(sums), cudaMemcpyDeviceToHost, m.stream));
    CUDA_CHECK(cudaStreamSynchronize(m.stream));
    float ms = 0.f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, m.start, m.stop));
    return {sums[0] / (double)m.s.n, sums[1] / (double)m.s.n, (double)ms};
}

void Trainer::step(const int32_t* idx, int rows, const Hyper& hyper) {
    Impl& m = *impl_;
    if (rows < 1 || rows > m.s.batch) throw std::invalid_argument("step: rows must be in 1..batch");
    check_indices(idx, rows, m.s.n);
    CUDA_CHECK(cudaMemcpyAsync(const_cast<int32_t*>(m.s.perm), idx, (size_t)rows * sizeof(int32_t),
                               cudaMemcpyHostToDevice, m.stream));
    m.upload_hyper(hyper);
    m.launch_step(0, rows);
    CUDA_CHECK(cudaStreamSynchronize(m.stream));
}

void Trainer::read_params(const std::vector<float*>& out, bool velocity) const {
    if (out.size() != 6) throw std::invalid_argument("read_params: expected 6 outputs");
    CUDA_CHECK(cudaStreamSynchronize(impl_->stream));
    for (int i = 0; i < 6; ++i)
        CUDA_CHECK(cudaMemcpy(out[i], velocity ? impl_->velocity(i) : impl_->param(i), kSizes[i] * sizeof(float),
                              cudaMemcpyDeviceToHost));
}

void Trainer::read_samples(float* loss, float* correct) const {
    CUDA_CHECK(cudaStreamSynchronize(impl_->stream));
    CUDA_CHECK(cudaMemcpy(loss, impl_->s.loss, (size_t)impl_->s.n * sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(correct, impl_->s.correct, (size_t)impl_->s.n * sizeof(float), cudaMemcpyDeviceToHost));
}

std::map<std::string, double> Trainer::profile(int reps) {
    Impl& m = *impl_;
    if (reps < 1) throw std::invalid_argument("profile: reps must be >= 1");
    DeviceState& s = m.s;
    // keep the model as it was: back up parameters and momentum buffers
    size_t total = 0;
    for (size_t k : kSizes) total += 2 * k;
    float* backup = m.alloc<float>(total);
    std::map<std::string, double> out;
    auto copy_all = [&](bool save) {
        size_t off = 0;
        for (int i = 0; i < 6; ++i)
            for (float* buf : {m.param(i), m.velocity(i)}) {
                CUDA_CHECK(cudaMemcpyAsync(save ? backup + off : buf, save ? buf : backup + off,
                                           kSizes[i] * sizeof(float), cudaMemcpyDeviceToDevice, m.stream));
                off += kSizes[i];
            }
    };
    auto time = [&](const char* name, auto&& launch) {
        launch();  // warm
        CUDA_CHECK(cudaEventRecord(m.start, m.stream));
        for (int r = 0; r < reps; ++r) launch();
        CUDA_CHECK(cudaEventRecord(m.stop, m.stream));
        CUDA_CHECK(cudaEventSynchronize(m.stop));
        float ms = 0.f;
        CUDA_CHECK(cudaEventElapsedTime(&ms, m.start, m.stop));
        out[name] = 1000.0 * ms / reps;
    };
    const int rows = s.batch;
    try {
        copy_all(true);
        m.upload_hyper(Hyper{0.f, 0.f, 0.f, 0.f});
        if (m.mixed) {
            time("forward_l1_us", [&] { launch_forward_l1_bf16(s, 0, rows, m.stream); });
            time("rows_us", [&] { launch_rows(s, 0, rows, true, m.stream); });
            time("grad_update_us", [&] { launch_grad_update_bf16(s, 0, rows, m.stream); });
        } else {
            time("forward_l1_us", [&] { launch_forward_l1_fp32(s, 0, rows, m.stream); });
            time("rows_us", [&] { launch_rows(s, 0, rows, false, m.stream); });
            time("grad_update_us", [&] { launch_grad_update_fp32(s, 0, rows, m.stream); });
        }
        time("step_no_graph_us", [&] { m.launch_step(0, rows); });
        copy_all(false);
        if (m.mixed) launch_w1_to_bf16(s, m.stream);
        CUDA_CHECK(cudaStreamSynchronize(m.stream));
    } catch (...) {
        cudaStreamSynchronize(m.stream);  // best effort: the copies may still read it
        m.drop(backup);
        throw;
    }
    m.drop(backup);
    return out;
}

bool Trainer::persistent_available() { return !impl_->mixed && impl_->persistent_grid_size() > 0; }

int Trainer::n() const { return impl_->s.n; }
int Trainer::batch() const { return impl_->s.batch; }
bool Trainer::mixed() const { return impl_->mixed; }

}  // namespace gemmpad::cuda::train
