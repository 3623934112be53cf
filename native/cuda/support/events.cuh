// CUDA events owned by one object (destroyed when an exception unwinds too): the benchmark
// brackets each repetition with a pair.
#pragma once

#include <cuda_runtime.h>

#include <vector>

#include "check.cuh"

namespace gemmpad::cuda {

// `n` CUDA events, destroyed with this object.
class Events {
  public:
    explicit Events(int n) : ev_(n) {
        for (auto& e : ev_) {
            CUDA_CHECK(cudaEventCreate(&e));
            ++made_;
        }
    }
    ~Events() {
        for (int i = 0; i < made_; ++i) cudaEventDestroy(ev_[i]);
    }
    Events(const Events&) = delete;
    Events& operator=(const Events&) = delete;
    cudaEvent_t operator[](int i) const { return ev_[i]; }

  private:
    std::vector<cudaEvent_t> ev_;
    int made_ = 0;
};

}  // namespace gemmpad::cuda
