// gemmpad._cpu: the CPU kernels of the registry, exposed to Python.
//
// Shapes and dtypes are validated in Python (gemmpad/runtime/gemm.py) where the error
// messages are friendlier; the checks here only keep a wrong call from
// touching memory it does not own.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <climits>

#include "cpu.h"
#include "bind.h"

namespace py = pybind11;
using namespace gemmpad;

namespace {

using F32Array = py::array_t<float, py::array::c_style | py::array::forcecast>;

py::list list_kernels() {
    py::list out;
    for (const auto& k : cpu::CpuRegistry::instance().list()) {
        py::dict d;
        d["name"] = k.name;
        d["precision"] = k.precision;
        d["summary"] = k.summary;
        d["source"] = k.source;
        out.append(d);
    }
    return out;
}

void run_gemm(const std::string& name, py::array_t<float, py::array::c_style> a,
              py::array_t<float, py::array::c_style> b, std::optional<py::array_t<float, py::array::c_style>> bias,
              int act, py::array_t<float, py::array::c_style> out) {
    if (a.ndim() != 2 || b.ndim() != 2 || out.ndim() != 2)
        throw std::invalid_argument("a, b and out must be 2-D");
    if (a.shape(0) > INT_MAX || a.shape(1) > INT_MAX || b.shape(1) > INT_MAX)
        throw std::invalid_argument("a dimension is over 2**31 - 1");  // GemmProblem's int
    const int M = (int)a.shape(0), K = (int)a.shape(1), N = (int)b.shape(1);
    if (b.shape(0) != K || out.shape(0) != M || out.shape(1) != N)
        throw std::invalid_argument("shape mismatch between a, b and out");
    if (bias && (bias->ndim() != 1 || bias->shape(0) != N))
        throw std::invalid_argument("bias must have shape (N,)");
    const auto& entry = cpu::CpuRegistry::instance().get(name);
    GemmProblem p;
    p.M = M; p.N = N; p.K = K;
    p.A = a.data();
    p.B = b.data();
    p.bias = bias ? bias->data() : nullptr;
    p.C = out.mutable_data();
    p.act = static_cast<Act>(act);
    py::gil_scoped_release nogil;
    entry.launch(p);
}

}  // namespace

PYBIND11_MODULE(_cpu, m) {
    m.doc() = "gemmpad CPU kernels (always built)";
    m.def("kernels", &list_kernels, "The CPU kernels of the registry, in ladder order.");
    m.def("gemm", &run_gemm, py::arg("name"), py::arg("a"), py::arg("b"), py::arg("bias"), py::arg("act"),
          py::arg("out"), "out = act(a @ b + bias) with the named kernel, in place.");
    gemmpad::cpu::bind_extras(m);
}
