// The native training engine as one C++ object (host interface only; the
// kernels are in the .cu files beside it (train.cuh lists them), the Python binding in
// bind_train.cpp). See train.cuh for how a step is split into kernels.
//
// Lifetime: construction uploads the dataset and the initial weights and
// allocates every buffer; nothing is allocated afterwards. The first graph
// epoch captures the epoch's launches into a CUDA graph; later epochs replay it.
// The persistent engine runs the epoch as one kernel instead (epoch_persistent.cu).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace gemmpad::cuda::train {

// Hyperparameters of one epoch or step. The update kernels read them from
// device memory, so one captured graph serves every epoch of a schedule.
struct Hyper {
    float lr;
    float momentum;
    float weight_decay;       // on W1, W2, W3
    float bias_weight_decay;  // on b1, b2, b3 (0, or weight_decay for torch.optim.SGD over all parameters)
};

// The persistent engine's largest batch: each block holds two batches of one W1 tile's X columns.
inline constexpr int PERSISTENT_MAX_BATCH = 256;

// How an epoch's steps reach the GPU: three launches a step one by one, the same launches replayed from a
// CUDA graph captured on the first epoch, or one persistent launch for the whole epoch (fp32 only).
enum class Engine { launches, graph, persistent };

struct EpochResult {
    double loss;      // mean cross-entropy over the epoch's samples (with the weights each saw)
    double accuracy;  // fraction of the epoch's samples classified right, same convention
    double gpu_ms;    // CUDA-event time of the epoch's kernels (after the uploads)
};

class Trainer {
  public:
    // x: [n, 784] fp32, labels: [n] in 0..9, params: W1 b1 W2 b2 W3 b3 (fp32,
    // row-major, model layout). mixed: bf16 tensor cores for layer 1. targets: null, or
    // [n, 10] fp32 soft targets (rows summing to 1) the loss is taken against instead of
    // the labels' one-hot rows (labels then only score accuracy).
    Trainer(const float* x, const int32_t* labels, int n, const std::vector<const float*>& params, int batch,
            bool mixed, const float* targets = nullptr);
    ~Trainer();
    Trainer(const Trainer&) = delete;
    Trainer& operator=(const Trainer&) = delete;

    // One pass over perm (a permutation, or any list of n row indices): batches
    // perm[0:batch], perm[batch:2*batch], ...; the last one may be shorter. The persistent engine
    // throws std::invalid_argument in mixed mode or for batches over PERSISTENT_MAX_BATCH,
    // std::runtime_error on a GPU that cannot run it.
    EpochResult epoch(const int32_t* perm, const Hyper& hyper, Engine engine);
    // One step on rows idx[0:rows] (rows <= batch), without a graph.
    void step(const int32_t* idx, int rows, const Hyper& hyper);
    // Copies W1 b1 W2 b2 W3 b3 (or their momentum buffers) into out[0..5].
    void read_params(const std::vector<float*>& out, bool velocity) const;
    // Per-sample loss and correctness (1/0) of the last epoch, in batch order.
    void read_samples(float* loss, float* correct) const;
    // Mean microseconds per launch of each kernel of a full-batch step (on the
    // first batch of the last order), and of a whole step launched without a
    // graph. Parameters and momentum buffers are restored afterwards; the
    // first batch's per-sample records are overwritten.
    std::map<std::string, double> profile(int reps);

    // Whether epoch(..., Engine::persistent) runs here: fp32, and a GPU with cooperative launch, a block
    // for each gradient tile and the kernel's shared memory (asked once). The batch limit is separate.
    bool persistent_available();
    int n() const;
    int batch() const;
    bool mixed() const;

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace gemmpad::cuda::train
