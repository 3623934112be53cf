// The contract every GEMM kernel of the ladder meets, CPU or CUDA.
//
// A kernel computes C = act(A @ B + bias) for row-major matrices
//   A [M, K], B [K, N], bias [N] (or nullptr), C [M, N],
// with any M, N, K >= 1. The epilogue (bias + activation) is fused into the
// store because that is what one layer of the MLP needs.
//
// Each kernel file registers itself with GEMMPAD_REGISTER_* (see below); the
// registry is the one list that the Python API, the CLI, the benchmarks and
// the app read.
#pragma once

#include <cstring>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace gemmpad {

enum class Act : int { None = 0, Relu = 1 };

// Element type of the A and B operands in memory. Float32 everywhere except
// the fp16, bf16 and fp8 tensor-core kernels, which read 16- or 8-bit operands (the
// caller converts once; cuBLAS's GEMM at those types is measured the same way).
// F8E4M3: 4 exponent and 3 mantissa bits, finite values up to 448, larger ones saturate.
enum class InType : int { F32 = 0, F16 = 1, BF16 = 2, F8E4M3 = 3 };
inline constexpr int kInTypes = 4;  // InType's values are 0 .. kInTypes - 1

struct GemmProblem {
    int M = 0, N = 0, K = 0;
    const void* A = nullptr;      // [M, K] row-major, element type `in_type`
    const void* B = nullptr;      // [K, N] row-major, element type `in_type`
    const float* bias = nullptr;  // [N] or nullptr
    float* C = nullptr;           // [M, N] row-major, float32
    Act act = Act::None;
    InType in_type = InType::F32;
    // CPU: the Ctrl-C count when the call began, or kUnwatched (cpu.h's stopped()); CUDA kernels ignore it.
    static constexpr unsigned kUnwatched = ~0u;
    unsigned presses = kUnwatched;
};

// What a user reads about a kernel. `precision` is the arithmetic:
// "fp32" (SIMT float), "tf32", "fp16", "bf16" or "fp8" (tensor cores, fp32 accumulate).
// A kernel asked for a problem its step was not written for (a shape, an alignment, a device):
// "<kernel> unavailable: <why>". A rung raises it rather than hand the problem to another rung,
// so that its bench row is always its own kernel; the dispatchers (cuda.auto_*) route around it.
// An invalid_argument, so a binding without its own translation still raises ValueError.
class Unavailable : public std::invalid_argument {
  public:
    Unavailable(const std::string& kernel, const std::string& why)
        : std::invalid_argument(kernel + " unavailable: " + why) {}
};

struct KernelInfo {
    std::string name;       // e.g. "cuda.03_smem_tiled"
    std::string precision;  // "fp32" | "tf32" | "fp16" | "bf16" | "fp8"
    InType in_type = InType::F32;
    std::string summary;    // one line
    std::string source;     // path inside the repository, e.g. native/cuda/gemm/03_smem_tiled.cu
    // For kernels that need more than the module's device (cuda.10 needs Hopper
    // and an sm_90a build): "" when the kernel can run here, else the reason.
    // nullptr: runs wherever the module runs.
    std::string (*unavailable)() = nullptr;
    // Why this kernel does not take problem p ("" when it does): the shapes and alignments its
    // step does not handle. Its launch throws Unavailable with this reason; a dispatcher asks
    // first. nullptr: every problem.
    std::string (*rejects)(const GemmProblem& p) = nullptr;
    // A dispatcher's rungs, the order it prefers them in (cuda.auto_fp32: 19, 07); empty for a rung.
    std::vector<std::string> routes{};
};

// Repository-relative source path from __FILE__ (which may be absolute).
inline std::string repo_path(const char* file) {
    std::string f(file);
    auto pos = f.rfind("native/");
    return pos == std::string::npos ? f : f.substr(pos);
}

// One registry per device. Function-local static avoids the static
// initialisation order problem between kernel files.
template <class Launch>
class Registry {
  public:
    struct Entry {
        KernelInfo info;
        Launch launch;
    };
    static Registry& instance() {
        static Registry r;
        return r;
    }
    bool add(KernelInfo info, Launch launch) {
        std::string key = info.name;
        entries_[key] = Entry{std::move(info), std::move(launch)};
        return true;
    }
    const Entry& get(const std::string& name) const {
        auto it = entries_.find(name);
        if (it == entries_.end()) {
            std::string known;
            for (auto& kv : entries_) known += (known.empty() ? "" : ", ") + kv.first;
            throw std::invalid_argument("unknown kernel '" + name + "'; known: " + known);
        }
        return it->second;
    }
    // Sorted by name, which is ladder order thanks to the numbering.
    std::vector<KernelInfo> list() const {
        std::vector<KernelInfo> out;
        for (auto& kv : entries_) out.push_back(kv.second.info);
        return out;
    }

  private:
    std::map<std::string, Entry> entries_;
};

}  // namespace gemmpad

#define GEMMPAD_CONCAT_(a, b) a##b
#define GEMMPAD_CONCAT(a, b) GEMMPAD_CONCAT_(a, b)
