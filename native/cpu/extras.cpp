// Extra CPU bindings beside the GEMM registry: which SIMD features this CPU has.
#include <pybind11/stl.h>

#include "bind.h"

namespace py = pybind11;

namespace gemmpad::cpu {

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
}

}  // namespace gemmpad::cpu
