// CUDA errors as C++ exceptions (gemmpad.errors.CudaError in Python), never an abort: the
// checked call's name, CUDA's own error string and the source line.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace gemmpad::cuda {

// A failed CUDA call. `what()` names the call and CUDA's own error string.
class CudaError : public std::runtime_error {
  public:
    CudaError(cudaError_t code, const std::string& msg) : std::runtime_error(msg), code_(code) {}
    cudaError_t code() const { return code_; }
    bool out_of_memory() const { return code_ == cudaErrorMemoryAllocation; }

  private:
    cudaError_t code_;
};

// Throws CudaError naming `call` when `err` is not cudaSuccess.
void check(cudaError_t err, const char* call, const char* file, int line);

// After a kernel launch: catches bad launch configurations and, with
// GEMMPAD_SYNC_CHECK=1 in the environment, faults inside the kernel too.
void check_launch(const char* kernel_name, const char* file, int line);

}  // namespace gemmpad::cuda

#define CUDA_CHECK(call) ::gemmpad::cuda::check((call), #call, __FILE__, __LINE__)
#define CUDA_CHECK_LAUNCH(name) ::gemmpad::cuda::check_launch((name), __FILE__, __LINE__)
