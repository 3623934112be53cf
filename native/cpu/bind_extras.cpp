// Extra CPU bindings beside the GEMM registry: which SIMD features this CPU has,
// which one the kernels dispatch to, and the MLP forward object (cpu/mlp/mlp.cpp).
#include <pybind11/stl.h>

#include "bind.h"
#include "simd.h"

namespace py = pybind11;

namespace gemmpad::cpu {

namespace mlp {
void bind_mlp(py::module_& m);  // cpu/mlp/mlp.cpp
}

void bind_extras(py::module_& m) {
    m.def(
        "cpu_features",
        [] {
            std::vector<std::string> f;
#if defined(__x86_64__) || defined(__i386__)
            __builtin_cpu_init();
            if (__builtin_cpu_supports("avx2")) f.push_back("avx2");
            if (__builtin_cpu_supports("fma")) f.push_back("fma");
            if (__builtin_cpu_supports("avx512f")) f.push_back("avx512f");
#endif
            return f;
        },
        "SIMD features the CPU kernels can dispatch to on this machine.");
    m.def(
        "cpu_isa", [] { return std::string(isa_name(isa())); },
        "The instruction set the optimised CPU kernels use here: 'avx512', 'avx2' or 'generic' "
        "(GEMMPAD_CPU_ISA=avx2|generic forces a lower one).");
    install_fork_handler();
    m.def(
        "openmp_threads", [] { return max_threads(); },
        "Threads the CPU kernels use for large problems: the fewest of the usable cores, "
        "OMP_NUM_THREADS and the cap (set_thread_cap); 1 in a forked child or without OpenMP.");
    m.def(
        "usable_cores", [] { return usable_cores(); },
        "Cores this process may run on (sched_getaffinity: taskset, a container's cpuset; counted once): "
        "the bound on the CPU kernels' threads, and what the window and job pools count from.");
    m.def(
        "thread_ranges",
        [](int64_t length, int64_t step, int threads) {
            if (length < 1 || step < 1 || threads < 1)
                throw py::value_error("length, step and threads must be >= 1");
            std::vector<std::pair<int64_t, int64_t>> out;
            for (const Range& r : gemmpad::cpu::thread_ranges(length, threads, step)) out.emplace_back(r.lo, r.hi);
            return out;
        },
        py::arg("length"), py::arg("step"), py::arg("threads"),
        "The [lo, hi) ranges of rows (or columns) that `threads` threads take of `length`, in "
        "whole steps: how the CPU kernels split their work (64-bit, exposed for tests).");
    m.def(
        "set_thread_cap", [](int n) {
            if (n < 0) throw py::value_error("thread cap must be >= 0 (0: no cap), got " + std::to_string(n));
            thread_cap().store(n, std::memory_order_relaxed);
        },
        py::arg("n"),
        "Use at most n threads in the CPU kernels from now on (0: as many as OpenMP gives); "
        "the window sets it to the cores its drawing leaves free.");
    mlp::bind_mlp(m);
}

}  // namespace gemmpad::cpu
