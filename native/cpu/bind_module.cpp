// gemmpad._cpu: the CPU kernels of the registry, exposed to Python.
//
// Shapes and dtypes are validated in Python (gemmpad/runtime/gemm.py) where the error
// messages are friendlier; the checks here only keep a wrong call from
// touching memory it does not own.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <climits>
#include <csignal>
#include <mutex>

#include "cpu.h"
#include "bind.h"

namespace py = pybind11;
using namespace gemmpad;

namespace {

using F32Array = py::array_t<float, py::array::c_style | py::array::forcecast>;

// Ctrl-C during a long product (cpu.h): a SIGINT handler in front of Python's, counting presses and passing
// each on. signal.signal() puts Python's own back whenever it is called (the command line does as it starts),
// so it is asked for again before each long product; where SIGINT is ignored, default or another library's
// (SA_SIGINFO) handler, nothing changes and the product finishes before Python hears the press, as before.
std::atomic<void (*)(int)> g_passed_on{nullptr};  // the handler each press is passed on to

void count_sigint(int sig, siginfo_t*, void*) {
    cpu::sigint_presses().fetch_add(1, std::memory_order_relaxed);  // lock-free atomics: async-signal-safe
    g_passed_on.load()(sig);
}

bool watch_sigint() {
    static std::mutex installing;
    std::lock_guard<std::mutex> lock(installing);
    struct sigaction now;
    if (sigaction(SIGINT, nullptr, &now) != 0) return false;
    if (now.sa_flags & SA_SIGINFO) return now.sa_sigaction == count_sigint;
    if (now.sa_handler == SIG_DFL || now.sa_handler == SIG_IGN) return false;
    g_passed_on.store(now.sa_handler);
    struct sigaction counting = now;
    counting.sa_flags |= SA_SIGINFO;
    counting.sa_sigaction = count_sigint;
    return sigaction(SIGINT, &counting, nullptr) == 0;
}

// Products from this size take milliseconds or more: watched for Ctrl-C (a sigaction call, ~1 us).
constexpr double kWatched = 1 << 26;

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
    p.presses = (double)M * N * K >= kWatched && watch_sigint() ? cpu::sigint_presses().load()
                                                                 : GemmProblem::kUnwatched;
    {
        py::gil_scoped_release nogil;
        entry.launch(p);
    }
    if (cpu::stopped(p.presses)) {  // C may be part-written: never returned as a result
        if (PyErr_CheckSignals() != 0) throw py::error_already_set();  // Python's handler (KeyboardInterrupt)
        PyErr_SetNone(PyExc_KeyboardInterrupt);  // a thread other than the main one, or a handler that went on
        throw py::error_already_set();
    }
}

}  // namespace

PYBIND11_MODULE(_cpu, m) {
    m.doc() = "gemmpad CPU kernels (always built)";
    m.def("kernels", &list_kernels, "The CPU kernels of the registry, in ladder order.");
    m.def("gemm", &run_gemm, py::arg("name"), py::arg("a"), py::arg("b"), py::arg("bias"), py::arg("act"),
          py::arg("out"), "out = act(a @ b + bias) with the named kernel, in place.");
    gemmpad::cpu::bind_extras(m);
}
