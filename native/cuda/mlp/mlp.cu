// The GPU MLP object (see mlp.cuh): resident weights, growing buffers, pinned + mapped
// staging, the fused path's CUDA graph, event timing, and the layer-by-layer path through
// any GEMM kernel of the registry. Weight layouts: weights.cu; input staging: staging.cu.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "fused_common.cuh"  // pixel_floats
#include "mlp.cuh"
#include "resident.cuh"
#include "staging.cuh"
#include "weights.cuh"

namespace gemmpad::cuda {

namespace {

__global__ void softmax_kernel(const float* __restrict__ logits, float* __restrict__ probs, int rows, int n) {
    const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (row >= rows) return;  // whole warps leave together
    const float* z = logits + (size_t)row * n;
    float m = -INFINITY;
    for (int c = lane; c < n; c += 32) m = fmaxf(m, z[c]);
    for (int off = 16; off > 0; off /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
    float sum = 0.0f;
    for (int c = lane; c < n; c += 32) sum += expf(z[c] - m);
    for (int off = 16; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
    for (int c = lane; c < n; c += 32) probs[(size_t)row * n + c] = expf(z[c] - m) / sum;
}

// 8-bit pixels to floats (pixel_floats, fused_common.cuh). 16 pixels per thread: one 16-byte load
// (a row of 784 is 49 of them; src is a cudaMalloc'd or cudaHostAlloc'd base), four float4 stores.
__global__ void u8_to_f32_kernel(const uint4* __restrict__ src, float4* __restrict__ dst, size_t n16) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n16; i += (size_t)gridDim.x * blockDim.x) {
        const uint4 v = src[i];
        const unsigned w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int j = 0; j < 4; ++j) dst[4 * i + j] = pixel_floats(w[j]);
    }
}

// Runs between the input copy and the start event. Without it the start event follows the
// copy engine's last write and the timed span opens with the copy engine handing over to the
// compute queue: an empty kernel timed that way measured 4.2-8.9 us instead of 2.5 (H200,
// native/tools/mlp_probe/rows.cu). With it, kernel_us holds only the forward.
__global__ void copy_handoff_kernel() {}

}  // namespace

// x: pinned host staging -> device (in_ -> x_, 8-bit: in8_ -> x8_; unless forward() has queued that
// already: stage_chunked), then the hand-off kernel above.
void Mlp::copy_in_x(int batch, Request req, bool staged) {
    if (!staged)
        CUDA_CHECK(cudaMemcpyAsync(req.u8 ? x8_.ptr : x_.ptr, req.u8 ? in8_.ptr : in_.ptr,
                                   (size_t)batch * kIn * (req.u8 ? 1 : sizeof(float)), cudaMemcpyHostToDevice, stream_));
    copy_handoff_kernel<<<1, 32, 0, stream_>>>();
    CUDA_CHECK_LAUNCH("copy hand-off");
}

void launch_softmax(const float* logits, float* probs, int rows, int n, cudaStream_t stream) {
    constexpr int kRowsPerBlock = 8;
    softmax_kernel<<<ceil_div(rows, kRowsPerBlock), kRowsPerBlock * 32, 0, stream>>>(logits, probs, rows, n);
    CUDA_CHECK_LAUNCH("softmax");
}

Mlp::Mlp(const float* W1, const float* b1, const float* W2, const float* b2, const float* W3, const float* b3) {
    try {
        CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
        CUDA_CHECK(cudaEventCreate(&start_));
        CUDA_CHECK(cudaEventCreate(&stop_));
        const float* W[3] = {W1, W2, W3};
        const float* b[3] = {b1, b2, b3};
        const int rows[3] = {kIn, kHidden, kHidden}, cols[3] = {kHidden, kHidden, kOut};
        const int prows[3] = {kIn, kHiddenPad, kHiddenPad}, pcols[3] = {kHiddenPad, kHiddenPad, kOutPad};
        for (int l = 0; l < 3; ++l) {
            const size_t n = (size_t)rows[l] * cols[l];
            // The ladder's copies: fp32, and converted once for the 16- and 8-bit tensor-core kernels.
            w_[0][l].reserve(n * sizeof(float));
            CUDA_CHECK(cudaMemcpyAsync(w_[0][l].ptr, W[l], n * sizeof(float), cudaMemcpyHostToDevice, stream_));
            for (int t = 1; t < kInTypes; ++t) {
                w_[t][l].reserve(n * in_bytes(InType(t)));
                cast_f32(static_cast<float*>(w_[0][l].ptr), w_[t][l].ptr, n, InType(t), stream_);
            }
            bias_[l].reserve(cols[l] * sizeof(float));
            CUDA_CHECK(cudaMemcpyAsync(bias_[l].ptr, b[l], cols[l] * sizeof(float), cudaMemcpyHostToDevice, stream_));
            // The fused kernels' zero-padded biases.
            layout::upload(fbias_[l], layout::padded(b[l], 1, cols[l], 1, pcols[l]), stream_);
        }
        // The fused kernels' weights (FusedWeights says which layout each kernel reads).
        w1_finite_ = std::all_of(W1, W1 + (size_t)kIn * kHidden, [](float v) { return std::isfinite(v); });
        const auto w1p = layout::padded(W1, kIn, kHidden, prows[0], pcols[0]);
        const auto w2p = layout::padded(W2, kHidden, kHidden, prows[1], pcols[1]);
        const auto w3p = layout::padded(W3, kHidden, kOut, prows[2], pcols[2]);
        const auto w1frag = layout::fragment_order(w1p, kIn, kHiddenPad, 16);
        layout::upload(fw1f_, w1frag, stream_);
        layout::upload(fw1h_, layout::tf32_as_half(w1frag, w1h_scale_), stream_);
        layout::upload(fw1f8_, layout::fragment_order(w1p, kIn, kHiddenPad, 8), stream_);
        layout::upload(fw2f_, layout::fragment_order(w2p, kHiddenPad, kHiddenPad, 16), stream_);
        layout::upload(fw2_, w2p, stream_);
        layout::upload(fw3_, w3p, stream_);
        layout::upload(fw3f_, layout::fragment_order(w3p, kHiddenPad, kOutPad, 16), stream_);
        CUDA_CHECK(cudaStreamSynchronize(stream_));
    } catch (...) {
        release();  // the destructor does not run for a constructor that throws
        throw;
    }
}

Mlp::~Mlp() { release(); }

void Mlp::resident_start(double idle_exit_s) {
    if (idle_exit_s < 0.0) idle_exit_s = resident_idle_exit_s_;  // as last asked
    const bool clusters = fused_clusters_enabled();
    if (resident_ && resident_->running() && resident_clusters_ == clusters && resident_->idle_exit_s() == idle_exit_s)
        return;
    resident_.reset();  // stopped from elsewhere (stop_all_residents), or another design asked for: a new one
    auto f = [](const DeviceBuffer& b) { return static_cast<const float*>(b.ptr); };
    resident_ = std::make_unique<Resident>(f(w_[0][0]), f(fw2_), f(fw3_), f(fbias_[0]), f(fbias_[1]), f(fbias_[2]),
                                           w1_finite_, clusters, idle_exit_s);
    resident_clusters_ = clusters;
    resident_idle_exit_s_ = idle_exit_s;
}

void Mlp::resident_stop(double timeout_s) {
    if (!resident_) return;
    std::unique_ptr<Resident> r = std::move(resident_);
    r->stop(timeout_s);  // throws on timeout; the destructor then leaves the mailbox alone
}

bool Mlp::resident_running() const { return resident_ && resident_->running(); }

int Mlp::resident_blocks() const { return resident_running() ? resident_->blocks() : 0; }

bool Mlp::resident_idle() const { return resident_running() && resident_->idle(); }

double Mlp::run_resident(const void* x, float* out, int batch, Request req, Hidden hidden) {
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    resident_start();  // (again if stop_all_residents stopped it)
    const float* xf = static_cast<const float*>(x);
    if (req.u8) {  // a few rows per request: scaled here, as gemmpad.inputs.preprocess scales them
        u8_rows_.resize((size_t)batch * kIn);
        const uint8_t* p = static_cast<const uint8_t*>(x);
        for (size_t i = 0; i < u8_rows_.size(); ++i) u8_rows_[i] = (float)p[i] * (float)(1.0 / 255.0);
        xf = u8_rows_.data();
    }
    timed_ = false;
    for (int attempt = 1;; ++attempt) {  // another thread's free may stop it between start and call
        try {
            kernel_us_ = resident_->forward(xf, out, batch, hidden.h1, hidden.h2);  // its own globaltimer spans
            break;
        } catch (const ResidentStopped&) {
            if (attempt == 3) throw;
            resident_start();
        }
    }
    timed_ = true;
    return std::chrono::duration<double, std::micro>(clock::now() - t0).count();
}

double Mlp::forward(const float* x, float* out, int batch, const std::string& kernel, Hidden hidden) {
    return run(x, out, batch, kernel, Request{false, (hidden.h1 ? 1 : 0) | (hidden.h2 ? 2 : 0)}, hidden);
}

double Mlp::forward_u8(const uint8_t* x, float* out, int batch, const std::string& kernel, Hidden hidden) {
    return run(x, out, batch, kernel, Request{true, (hidden.h1 ? 1 : 0) | (hidden.h2 ? 2 : 0)}, hidden);
}

void Mlp::release() noexcept {
    resident_.reset();  // stops its kernel (errors swallowed) before the weights it reads go
    if (stream_) cudaStreamSynchronize(stream_);
    for (auto& group : w_)
        for (auto& w : group) w.release();
    for (auto* group : {bias_, fbias_})
        for (int l = 0; l < 3; ++l) group[l].release();
    for (auto* b : {&fw1f_, &fw1f8_, &fw1h_, &fw2f_, &fw2_, &fw3_, &fw3f_, &x_, &h1_, &h2_, &logits_, &probs_, &a16_,
                    &scratch_partials_, &scratch_counters_, &x8_})
        b->release();
    pool_.reset();  // (its helpers are idle: stage_chunked waits for them)
    graphs_.clear();
    for (auto* b : {&in_, &out_, &in8_, &hid_}) b->release();
    if (start_) cudaEventDestroy(start_);
    if (stop_) cudaEventDestroy(stop_);
    if (stream_) cudaStreamDestroy(stream_);
    start_ = stop_ = nullptr;
    stream_ = nullptr;
}

size_t Mlp::device_bytes() const {
    size_t total = 0;
    for (const auto& group : w_)
        for (const auto& w : group) total += w.bytes;
    for (const auto* group : {bias_, fbias_})
        for (int l = 0; l < 3; ++l) total += group[l].bytes;
    for (const auto* b : {&fw1f_, &fw1f8_, &fw1h_, &fw2f_, &fw2_, &fw3_, &fw3f_, &x_, &h1_, &h2_, &logits_, &probs_, &a16_,
                          &scratch_partials_, &scratch_counters_, &x8_})
        total += b->bytes;
    return total;
}

void Mlp::ensure_capacity(int batch, Request req) {
    // The fused kernel's scratch depends on its tile size, which changes with
    // the batch (a smaller batch can need more counters), so check it always.
    const auto [floats, counters] = fused_scratch_size(batch);
    const bool grows = floats > scratch_floats_ || counters > scratch_counters_n_ || batch > capacity_ ||
                       (req.u8 && batch > u8_capacity_) || (req.hidden && batch > hid_capacity_);
    if (grows) resident_stop(2.0);  // a free may wait for every kernel: not for one that never ends
    if (floats > scratch_floats_) {
        scratch_partials_.reserve(floats * sizeof(float));
        scratch_floats_ = floats;
    }
    if (counters > scratch_counters_n_) {
        scratch_counters_.reserve(counters * sizeof(unsigned));
        // The fused kernel expects zeros and leaves zeros behind.
        CUDA_CHECK(cudaMemsetAsync(scratch_counters_.ptr, 0, counters * sizeof(unsigned), stream_));
        scratch_counters_n_ = counters;
    }
    const size_t B = batch;
    // forward() may return before the GPU is done with old buffers: wait before any is replaced
    if (req.u8 && batch > u8_capacity_) {
        CUDA_CHECK(cudaStreamSynchronize(stream_));
        x8_.reserve(B * kIn);
        in8_.reserve(B * kIn);
        u8_capacity_ = batch;
    }
    if (req.hidden && batch > hid_capacity_) {
        CUDA_CHECK(cudaStreamSynchronize(stream_));
        hid_.reserve(2 * B * kHidden * sizeof(float));
        hid_capacity_ = batch;
    }
    if (batch <= capacity_) return;
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    x_.reserve(B * kIn * sizeof(float));
    h1_.reserve(B * kHidden * sizeof(float));
    h2_.reserve(B * kHidden * sizeof(float));
    logits_.reserve(B * kOut * sizeof(float));
    probs_.reserve(B * kOut * sizeof(float));
    a16_.reserve(B * kIn * sizeof(__half));
    in_.reserve(B * kIn * sizeof(float));
    out_.reserve(B * kOut * sizeof(float));
    capacity_ = batch;
}

void Mlp::forward_layered(const std::string& kernel, int batch) {
    const auto& entry = CudaRegistry::instance().get(kernel);
    const InType t = entry.info.in_type;
    const float* acts_in[3] = {static_cast<float*>(x_.ptr), static_cast<float*>(h1_.ptr),
                               static_cast<float*>(h2_.ptr)};
    float* acts_out[3] = {static_cast<float*>(h1_.ptr), static_cast<float*>(h2_.ptr),
                          static_cast<float*>(logits_.ptr)};
    const int K[3] = {kIn, kHidden, kHidden}, N[3] = {kHidden, kHidden, kOut};
    for (int l = 0; l < 3; ++l) {
        GemmProblem p;
        p.M = batch;
        p.N = N[l];
        p.K = K[l];
        p.bias = static_cast<const float*>(bias_[l].ptr);
        p.C = acts_out[l];
        p.act = l < 2 ? Act::Relu : Act::None;
        p.in_type = entry.info.in_type;
        p.B = w_[int(t)][l].ptr;
        p.A = acts_in[l];
        if (t != InType::F32) {
            cast_f32(acts_in[l], a16_.ptr, (size_t)batch * K[l], t, stream_);
            p.A = a16_.ptr;
        }
        entry.launch(p, stream_);
    }
    launch_softmax(static_cast<float*>(logits_.ptr), static_cast<float*>(probs_.ptr), batch, kOut, stream_);
}

bool Mlp::GraphKey::operator==(const GraphKey& o) const {
    if (kind != o.kind || batch != o.batch || clusters != o.clusters || staged != o.staged ||
        mapped_u8 != o.mapped_u8 || mapped_out != o.mapped_out || req.u8 != o.req.u8 || req.hidden != o.req.hidden)
        return false;
    for (int i = 0; i < kBuffers; ++i)
        if (buffers[i] != o.buffers[i]) return false;
    return true;
}

Mlp::GraphKey Mlp::fused_key(FusedKind kind, int batch, Request req) const {
    GraphKey k;
    k.kind = kind;
    k.batch = batch;
    k.clusters = fused_clusters_enabled();
    k.staged = staged(batch, req);
    k.mapped_u8 = req.u8 && mapped_u8(batch);
    k.mapped_out = mapped_out(batch);
    k.req = req;
    const void* b[GraphKey::kBuffers] = {x_.ptr,  probs_.ptr, in_.ptr, out_.ptr, scratch_partials_.ptr,
                                         scratch_counters_.ptr, x8_.ptr, in8_.ptr, h1_.ptr, h2_.ptr, hid_.ptr};
    std::copy(b, b + GraphKey::kBuffers, k.buffers);
    return k;
}

void Mlp::enqueue_u8_in(int batch) {
    const size_t n16 = (size_t)batch * kIn / 16;  // 784 = 49 x 16: whole loads per row
    static_assert(kIn % 16 == 0, "a row of pixels is whole 16-byte loads");
    const void* src = u8_source(batch);
    // small blocks: reads through the mapping spread over many SMs, each with its own loads in flight
    constexpr int kThreadsU8 = 64;
    const size_t blocks = std::min<size_t>((n16 + kThreadsU8 - 1) / kThreadsU8, 65535);
    u8_to_f32_kernel<<<(unsigned)blocks, kThreadsU8, 0, stream_>>>(static_cast<const uint4*>(src),
                                                                  static_cast<float4*>(x_.ptr), n16);
    CUDA_CHECK_LAUNCH("8-bit input to float");
}

void Mlp::enqueue_hidden_out(int batch, int hidden) {
    const size_t n = (size_t)batch * kHidden;
    float* dst = static_cast<float*>(hid_.ptr);
    if (hidden & 1) CUDA_CHECK(cudaMemcpyAsync(dst, h1_.ptr, n * sizeof(float), cudaMemcpyDeviceToHost, stream_));
    if (hidden & 2) CUDA_CHECK(cudaMemcpyAsync(dst + n, h2_.ptr, n * sizeof(float), cudaMemcpyDeviceToHost, stream_));
}

FusedWeights Mlp::fused_weights() const {
    auto f = [](const DeviceBuffer& b) { return static_cast<const float*>(b.ptr); };
    return FusedWeights{f(fw1f_), f(fw1f8_), fw1h_.ptr, w1h_scale_, f(fw2f_), f(fw2_), f(fw3_), f(fw3f_),
                        f(fbias_[0]), f(fbias_[1]), f(fbias_[2])};
}

bool Mlp::mapped_out(int batch) const { return batch <= staging_.mapped_out_rows; }

bool Mlp::mapped_u8(int batch) const { return batch <= staging_.mapped_u8_rows; }

const void* Mlp::u8_source(int batch) const { return mapped_u8(batch) ? in8_.device : x8_.ptr; }

bool Mlp::staged(int batch, Request req) const {
    // (never for batches the kernel may read from mapped memory)
    const bool mapped = req.u8 ? mapped_u8(batch) : batch <= kMappedInMax;
    return !mapped && (size_t)batch * kIn * (req.u8 ? 1 : sizeof(float)) >= staging_.min_bytes;
}

void Mlp::enqueue_fused(FusedKind kind, int batch, Request req) {
    FusedPlan plan = fused_plan(kind, batch);
    // x from host memory only where the kernel shares it over a cluster (read once, not once per block),
    // 8-bit x there too where the policy reads it in place. Those slices, and the k-split and row-block
    // (TMA) kernels from bytes copied to the device, load 8-bit x themselves and make the floats as they
    // go; otherwise a kernel makes the floats in x_ first (through the mapping, the k-split kernel's
    // cp.async reads measured 1.2-1.5x slower than that kernel's spread loads: NOTES.md).
    plan.x_slices = batch <= kMappedInMax && (!req.u8 || mapped_u8(batch)) && plan.design == FusedPlan::Split &&
                    plan.engine == Engine::Fma && fused_split_max_clusters(plan) > 0;
    const bool copied_u8 = req.u8 && !mapped_u8(batch);
    plan.x_u8 = req.u8 && (plan.x_slices || (copied_u8 && (plan.design == FusedPlan::KSplit ||
                                                          (plan.design == FusedPlan::Rows && plan.tma_x))));
    const bool out_mapped = mapped_out(batch);
    const size_t out_bytes = (size_t)batch * kOut * sizeof(float);
    FusedScratch s{static_cast<float*>(scratch_partials_.ptr), static_cast<unsigned*>(scratch_counters_.ptr)};
    const void* src = plan.x_u8 ? u8_source(batch) : plan.x_slices ? in_.device : x_.ptr;  // (FusedPlan::x_u8)
    float* dst = out_mapped ? static_cast<float*>(out_.device) : static_cast<float*>(probs_.ptr);
    // bytes to the device unless read through the mapping (small batches), floats unless the slices read them there
    if (req.u8 ? copied_u8 : !plan.x_slices) copy_in_x(batch, req, staged(batch, req));
    CUDA_CHECK(cudaEventRecordWithFlags(start_, stream_, cudaEventRecordExternal));
    if (req.u8 && !plan.x_u8) enqueue_u8_in(batch);  // the floats made on the device
    const FusedHidden hid{req.hidden & 1 ? static_cast<float*>(h1_.ptr) : nullptr,
                          req.hidden & 2 ? static_cast<float*>(h2_.ptr) : nullptr};
    launch_fused(plan, fused_weights(), src, dst, batch, s, stream_, hid);
    CUDA_CHECK(cudaEventRecordWithFlags(stop_, stream_, cudaEventRecordExternal));
    if (!out_mapped) CUDA_CHECK(cudaMemcpyAsync(out_.ptr, probs_.ptr, out_bytes, cudaMemcpyDeviceToHost, stream_));
    if (req.hidden) enqueue_hidden_out(batch, req.hidden);
}

const Graph& Mlp::fused_graph(FusedKind kind, int batch, Request req) {
    const GraphKey key = fused_key(kind, batch, req);
    for (size_t i = 0; i < graphs_.size(); ++i)
        if (graphs_[i].key == key) {
            std::rotate(graphs_.begin(), graphs_.begin() + i, graphs_.begin() + i + 1);  // most recent first
            return graphs_[0].graph;
        }
    CUDA_CHECK(cudaStreamSynchronize(stream_));  // a graph to be dropped may still be finishing
    if (graphs_.size() == kGraphs) graphs_.pop_back();
    // relaxed: the first launch of a kernel configures it (cudaFuncSetAttribute) inside the capture
    Graph graph = Graph::capture(stream_, cudaStreamCaptureModeRelaxed, [&] { enqueue_fused(kind, batch, req); });
    graphs_.insert(graphs_.begin(), CachedGraph{key, std::move(graph)});
    return graphs_[0].graph;
}

// What the host writes into the mapped output before a launch and spins on: a NaN with
// the sign bit set, which no kernel stores (GPU arithmetic makes NaNs 0x7fffffff, the
// fused kernels store theirs as 0x7fc00000). Every value is written once, as one 32-bit
// store, so once none of them is kPending all of them are final.
constexpr uint32_t kPending = 0xffffffffu;

void Mlp::wait_for_output(const float* out, size_t n) {
    const volatile uint32_t* v = reinterpret_cast<const volatile uint32_t*>(out);
    size_t i = 0;  // v[0, i) are known to be written
    for (unsigned spin = 1;; ++spin) {
        while (i < n && v[i] != kPending) ++i;
        if (i == n) return;
        if (spin % 1024 == 0) {  // rarely (a few us apart): did the kernel fail, or end without writing?
            const cudaError_t e = cudaEventQuery(stop_);
            if (e == cudaErrorNotReady) continue;
            CUDA_CHECK(e);
            for (; i < n; ++i)  // the stop event is complete: everything the kernel stored is visible
                if (v[i] == kPending)
                    throw std::runtime_error("cuda.mlp_fused: the kernel finished without writing probability " +
                                             std::to_string(i));
            return;
        }
    }
}

double Mlp::run(const void* x, float* out, int batch, const std::string& kernel, Request req, Hidden hidden) {
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    if (batch < 1) throw std::invalid_argument("batch must be >= 1");
    if (kernel == kResidentName) return run_resident(x, out, batch, req, hidden);
    FusedKind kind{};
    const bool fused = fused_kind(kernel, kind);
    if (!fused) CudaRegistry::instance().get(kernel);  // unknown name -> clear error before any work
    ensure_capacity(batch, req);
    const size_t in_bytes = (size_t)batch * kIn * (req.u8 ? 1 : sizeof(float));
    const size_t out_bytes = (size_t)batch * kOut * sizeof(float);
    timed_ = false;
    kernel_us_ = -1.0;
    bool spin = false;
    const bool chunked = staged(batch, req);
    void* pinned = req.u8 ? in8_.ptr : in_.ptr;
    if (chunked) stage_chunked(x, in_bytes, pinned, req.u8 ? x8_.ptr : x_.ptr);  // queued ahead of graph or layers
    else if (in_bytes > staging_.mapped_split_bytes) stage_chunked(x, in_bytes, pinned, nullptr);  // host copies only
    else std::memcpy(pinned, x, in_bytes);  // pinned staging: read mapped or copied to the device
    if (fused) {
        const Graph& graph = fused_graph(kind, batch, req);
        // the graph (its key holds this policy) writes `out` mapped; hidden layers come by copies: wait for the stream
        spin = mapped_out(batch) && req.hidden == 0;
        if (spin) std::fill_n(static_cast<uint32_t*>(out_.ptr), (size_t)batch * kOut, kPending);
        graph.launch(stream_);
    } else {
        if (!(req.u8 && mapped_u8(batch))) copy_in_x(batch, req, chunked);
        CUDA_CHECK(cudaEventRecord(start_, stream_));
        if (req.u8) enqueue_u8_in(batch);
        forward_layered(kernel, batch);
        CUDA_CHECK(cudaEventRecord(stop_, stream_));
        CUDA_CHECK(cudaMemcpyAsync(out_.ptr, probs_.ptr, out_bytes, cudaMemcpyDeviceToHost, stream_));
        if (req.hidden) enqueue_hidden_out(batch, req.hidden);  // the layers' own outputs
    }
    timed_ = true;
    if (spin) wait_for_output(static_cast<const float*>(out_.ptr), (size_t)batch * kOut);
    else CUDA_CHECK(cudaStreamSynchronize(stream_));
    copy_out(out, out_.ptr, out_bytes);
    const size_t hn = (size_t)batch * kHidden;
    if (hidden.h1) copy_out(hidden.h1, hid_.ptr, hn * sizeof(float));
    if (hidden.h2) copy_out(hidden.h2, static_cast<const float*>(hid_.ptr) + hn, hn * sizeof(float));
    return std::chrono::duration<double, std::micro>(clock::now() - t0).count();
}

double Mlp::kernel_us() {
    if (!timed_) throw std::logic_error("no forward pass has been timed yet");
    if (kernel_us_ < 0.0) {
        CUDA_CHECK(cudaEventSynchronize(stop_));
        float ms = 0.0f;
        CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
        kernel_us_ = ms * 1000.0;
    }
    return kernel_us_;
}

}  // namespace gemmpad::cuda
