// A CUDA graph captured from a stream, owned by one object: the one graph type (the MLP's fused
// forward pass, the trainer's epoch). One submission replays every launch and copy it recorded.
#pragma once

#include <cuda_runtime.h>

#include <utility>

#include "check.cuh"

namespace gemmpad::cuda {

class Graph {
  public:
    Graph() = default;
    ~Graph() { reset(); }
    Graph(Graph&& o) noexcept : exec_(std::exchange(o.exec_, nullptr)) {}
    Graph& operator=(Graph&& o) noexcept {
        if (this != &o) {
            reset();
            exec_ = std::exchange(o.exec_, nullptr);
        }
        return *this;
    }
    Graph(const Graph&) = delete;
    Graph& operator=(const Graph&) = delete;

    // What `enqueue()` queues on `stream`, captured and instantiated. If it throws, the capture is
    // ended and dropped (the stream stays usable) and its error, the one to report, propagates.
    // Relaxed mode lets a kernel's first launch configure it (cudaFuncSetAttribute) inside the capture.
    template <class Enqueue>
    static Graph capture(cudaStream_t stream, cudaStreamCaptureMode mode, Enqueue&& enqueue) {
        CUDA_CHECK(cudaStreamBeginCapture(stream, mode));
        cudaGraph_t g = nullptr;
        try {
            enqueue();
        } catch (...) {
            cudaStreamEndCapture(stream, &g);
            if (g) cudaGraphDestroy(g);
            cudaGetLastError();
            throw;
        }
        CUDA_CHECK(cudaStreamEndCapture(stream, &g));
        Graph out;
        const cudaError_t err = cudaGraphInstantiate(&out.exec_, g, 0);
        cudaGraphDestroy(g);
        CUDA_CHECK(err);
        return out;
    }

    void launch(cudaStream_t stream) const { CUDA_CHECK(cudaGraphLaunch(exec_, stream)); }
    explicit operator bool() const { return exec_ != nullptr; }
    void reset() noexcept {  // best effort: may run while the driver shuts down
        if (exec_) cudaGraphExecDestroy(exec_);
        exec_ = nullptr;
    }

  private:
    cudaGraphExec_t exec_ = nullptr;
};

}  // namespace gemmpad::cuda
