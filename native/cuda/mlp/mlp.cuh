// The 784-100-100-10 MLP forward pass on the GPU, as one object that owns
// everything a call needs: weights uploaded once, device buffers that only
// grow, pinned (and mapped) host staging buffers, and CUDA events for timing.
//
// Two ways to run it:
//   * layer by layer through any GEMM kernel of the registry (the ladder), with
//     bias + ReLU fused into each GEMM's store and a small softmax kernel last;
//   * "cuda.mlp_fused*": the whole network in one launch (fused_mlp.cu).
// No pybind11 here (nvcc compiles it slowly); bind_mlp.cpp wraps this class.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "../common.cuh"

namespace gemmpad::cuda {

// The network's shape. The fused kernel pads every width up to a multiple of
// 16 (tensor-core tiles): 100 -> 112, 10 -> 16; 784 is 7 chunks of 112.
inline constexpr int kIn = 784, kHidden = 100, kOut = 10;
inline constexpr int kHiddenPad = 112, kOutPad = 16;
inline constexpr int kChunk = 112;                 // K columns of layer 1 per chunk
inline constexpr int kChunks = kIn / kChunk;       // 7
static_assert(kChunks * kChunk == kIn, "784 must split into whole chunks");

// A whole-network kernel, as listed by _cuda.mlp_kernels().
struct MlpKernelInfo {
    std::string name, precision, summary, source;
};
const std::vector<MlpKernelInfo>& mlp_kernel_list();

// Weights as the fused kernel reads them: fp32, zero-padded to tile multiples
// (W1 [784,112], W2 [112,112], W3 [112,16], biases [112], [112], [16]).
// Not pre-split for 3xTF32: the split happens in registers, which halves the
// bytes every block pulls from L2 (the bottleneck at large batches).
struct FusedWeights {
    const float *w1, *w2, *w3, *b1, *b2, *b3;
};

// Scratch for the split-K scheme: per-tile partial sums and arrival counters.
// The counters must start at zero; the kernel leaves them at zero again.
struct FusedScratch {
    float* partials = nullptr;    // [tiles][kChunks][tile rows][kHiddenPad]
    unsigned* counters = nullptr;  // [tiles]
};

// out[B,10] = softmax(relu(relu(x W1 + b1) W2 + b2) W3 + b3) in one launch.
// `x` and `out` may be device pointers or mapped pinned host memory.
// split3 = true: 3xTF32 (fp32 accuracy); false: one tf32 pass.
void launch_fused_mlp(const FusedWeights& w, const float* x, float* out, int batch, bool split3,
                      const FusedScratch& scratch, cudaStream_t stream);
// Floats of partial sums and number of counters a launch for `batch` needs.
std::pair<size_t, int> fused_scratch_size(int batch);

// Architectures the module was compiled for, e.g. "800,860,890,900".
std::string build_arch_list();

// Row-wise softmax over `n` columns, one warp per row.
void launch_softmax(const float* logits, float* probs, int rows, int n, cudaStream_t stream);

// A device or pinned-host allocation that only grows.
struct DeviceBuffer {
    void* ptr = nullptr;
    size_t bytes = 0;
    void* reserve(size_t want);  // contents are undefined after growth
    void release() noexcept;
};
struct PinnedBuffer {
    void* ptr = nullptr;      // host address
    void* device = nullptr;   // the same memory as the GPU sees it (mapped)
    size_t bytes = 0;
    void* reserve(size_t want);
    void release() noexcept;
};

class Mlp {
  public:
    // Host float32 arrays: W1 [784,100], b1 [100], W2 [100,100], b2 [100], W3 [100,10], b3 [10].
    Mlp(const float* W1, const float* b1, const float* W2, const float* b2, const float* W3, const float* b3);
    ~Mlp();
    Mlp(const Mlp&) = delete;
    Mlp& operator=(const Mlp&) = delete;

    // x [batch, 784] -> out [batch, 10] (host memory). Returns (kernel_us from
    // CUDA events, end_to_end_us from the host's steady clock, this call only).
    std::pair<double, double> forward(const float* x, float* out, int batch, const std::string& kernel);

    // Device bytes this object holds (for the soak test: must stop growing).
    size_t device_bytes() const;

  private:
    void ensure_capacity(int batch);
    void release() noexcept;
    void forward_layered(const std::string& kernel, int batch);

    cudaStream_t stream_ = nullptr;
    cudaEvent_t start_ = nullptr, stop_ = nullptr;
    // Unpadded weights for the GEMM ladder (fp32 and fp16 copies).
    DeviceBuffer w32_[3], w16_[3], bias_[3];
    // Padded weights for the fused kernel.
    DeviceBuffer fw_[3], fbias_[3];
    // Activations (device) and staging (pinned, mapped).
    DeviceBuffer x_, h1_, h2_, logits_, probs_, a16_, scratch_partials_, scratch_counters_;
    PinnedBuffer in_, out_;
    int capacity_ = 0;
    size_t scratch_floats_ = 0;
    int scratch_counters_n_ = 0;
};

}  // namespace gemmpad::cuda
