// Python binding of the GPU MLP (gemmpad._cuda.Mlp) and its kernel list.
// Shapes and dtypes are checked here so that a wrong array is a ValueError,
// never an out-of-bounds read on the device.
#include <optional>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "../bind.h"
#include "gemmpad/gil.h"
#include "mlp.cuh"

namespace py = pybind11;

namespace gemmpad::cuda {
namespace {

using F32Array = py::array_t<float, py::array::c_style>;

const float* checked(const F32Array& a, std::initializer_list<py::ssize_t> shape, const char* name) {
    bool ok = a.ndim() == (py::ssize_t)shape.size();
    py::ssize_t i = 0;
    for (auto d : shape) ok = ok && a.shape(i++) == d;
    if (!ok) {
        std::string want;
        for (auto d : shape) want += (want.empty() ? "" : ", ") + std::to_string(d);
        throw std::invalid_argument(std::string(name) + " must have shape (" + want + ")");
    }
    return a.data();
}

// Arrays must already be float32 and C-contiguous: a silent conversion of
// `out` would write the probabilities into a temporary copy.
F32Array strict(const py::array& a, const char* name) {
    if (!py::isinstance<F32Array>(a) || !(a.flags() & py::array::c_style))
        throw std::invalid_argument(std::string(name) + " must be a C-contiguous float32 array");
    return py::reinterpret_borrow<F32Array>(a);
}

// The optional hidden-layer outputs: float32 C-contiguous (batch, 100), writeable, apart from each
// other and from x and out (the copies into them would otherwise race with their reads).
Mlp::Hidden hidden_arrays(const py::object& h1, const py::object& h2, int batch, const py::array& x,
                          const py::array& out) {
    Mlp::Hidden h;
    std::vector<py::array> seen{x, out};
    const std::pair<const py::object*, const char*> wanted[2] = {{&h1, "h1"}, {&h2, "h2"}};
    for (const auto& [obj, name] : wanted) {
        if (obj->is_none()) continue;
        if (!py::isinstance<py::array>(*obj)) throw std::invalid_argument(std::string(name) + " must be a NumPy array");
        F32Array a = strict(py::reinterpret_borrow<py::array>(*obj), name);
        checked(a, {batch, kHidden}, name);
        if (!a.writeable()) throw std::invalid_argument(std::string(name) + " must be writeable");
        for (const auto& other : seen) {
            const char* p = reinterpret_cast<const char*>(a.data());
            const char* q = static_cast<const char*>(other.data());
            if (p < q + other.nbytes() && q < p + a.nbytes())
                throw std::invalid_argument(std::string(name) + " must not overlap x, out or the other hidden array");
        }
        seen.push_back(a);
        (name[1] == '1' ? h.h1 : h.h2) = a.mutable_data();
    }
    return h;
}

// x: float32 or (u8) uint8, C-contiguous (B, 784); out float32 (B, 10); then the pass without the GIL.
double run_forward(Mlp& self, const py::array& x_in, bool u8, const py::array& out_in, const std::string& kernel,
                   const py::object& h1, const py::object& h2) {
    if (u8 && (!py::isinstance<py::array_t<uint8_t>>(x_in) || !(x_in.flags() & py::array::c_style)))
        throw std::invalid_argument("x must be a C-contiguous uint8 array");
    const py::array x = u8 ? x_in : py::array(strict(x_in, "x"));
    F32Array out = strict(out_in, "out");
    if (x.ndim() != 2 || x.shape(1) != kIn || x.shape(0) < 1)
        throw std::invalid_argument("x must have shape (B, 784) with B >= 1");
    if (x.shape(0) > 0x7fffffff / kIn)  // batch * 784 indexes x as an int (as on the CPU)
        throw std::invalid_argument("x has too many rows: at most 2**31 - 1 values");
    const int batch = (int)x.shape(0);
    float* o = const_cast<float*>(checked(out, {batch, kOut}, "out"));
    const Mlp::Hidden hidden = hidden_arrays(h1, h2, batch, x, out);
    const void* xp = x.data();
    const ReleaseGilFor nogil(batch);
    return u8 ? self.forward_u8(static_cast<const uint8_t*>(xp), o, batch, kernel, hidden)
              : self.forward(static_cast<const float*>(xp), o, batch, kernel, hidden);
}

}  // namespace

void bind_mlp(py::module_& m) {
    py::class_<Mlp>(m, "Mlp", "The 784-100-100-10 MLP with its weights resident on the GPU.")
        .def(py::init([](F32Array W1, F32Array b1, F32Array W2, F32Array b2, F32Array W3, F32Array b3) {
                 return new Mlp(checked(W1, {kIn, kHidden}, "W1"), checked(b1, {kHidden}, "b1"),
                                checked(W2, {kHidden, kHidden}, "W2"), checked(b2, {kHidden}, "b2"),
                                checked(W3, {kHidden, kOut}, "W3"), checked(b3, {kOut}, "b3"));
             }),
             py::arg("W1"), py::arg("b1"), py::arg("W2"), py::arg("b2"), py::arg("W3"), py::arg("b3"))
        .def(
            "forward",
            [](Mlp& self, const py::array& x, const py::array& out, const std::string& kernel, const py::object& h1,
               const py::object& h2) { return run_forward(self, x, false, out, kernel, h1, h2); },
            py::arg("x"), py::arg("out"), py::arg("kernel") = "cuda.mlp_fused", py::arg("h1") = py::none(),
            py::arg("h2") = py::none(),
            "out = probabilities for x. Returns once they are in `out`, with the microseconds from the call to "
            "then (C++ clock); the kernel time comes from kernel_us(). h1, h2: optional float32 (B, 100) arrays "
            "that receive the post-ReLU hidden activations the kernel itself computed.")
        .def(
            "forward_u8",
            [](Mlp& self, const py::array& x, const py::array& out, const std::string& kernel, const py::object& h1,
               const py::object& h2) { return run_forward(self, x, true, out, kernel, h1, h2); },
            py::arg("x"), py::arg("out"), py::arg("kernel") = "cuda.mlp_fused", py::arg("h1") = py::none(),
            py::arg("h2") = py::none(),
            "forward() for 8-bit pixels x uint8 (B, 784), read as x * float32(1/255) (gemmpad.inputs.preprocess's "
            "scaling): the bytes cross PCIe into pinned staging and the floats are made on the GPU.")
        .def(
            "kernel_us",
            [](Mlp& self) {
                py::gil_scoped_release nogil;
                return self.kernel_us();
            },
            "Kernel time of the last forward() in microseconds (CUDA events around the forward pass); the first "
            "call after a forward() waits for its stop event.")
        .def_property_readonly("device_bytes", &Mlp::device_bytes, "Device memory this object holds.")
        .def(
            "resident_start",
            [](Mlp& self, std::optional<double> idle_exit_s) {
                if (idle_exit_s && !(*idle_exit_s >= 0.0 && *idle_exit_s < 1e6))
                    throw std::invalid_argument("idle_exit_s must be >= 0 seconds (0: never) and < 1e6");
                py::gil_scoped_release nogil;
                self.resident_start(idle_exit_s.value_or(-1.0));
            },
            py::arg("idle_exit_s") = py::none(),
            "Start cuda.mlp_resident's persistent kernel (on sm_90 a cluster of four blocks, else one block; its own "
            "stream, polling mapped host memory); forward() with that kernel starts it too. No host thread spins "
            "while it waits. set_fused_clusters(False) asks for the one-block design. idle_exit_s (default: as last "
            "asked, 1 s at first; 0: never): the kernel returns after that long without a request, so that it leaves "
            "the GPU to other contexts (OpenGL drawing on the same GPU loses a timeslice per frame beside it), and "
            "the next call starts it again.")
        .def(
            "resident_stop",
            [](Mlp& self, double timeout_s) {
                if (!(timeout_s > 0.0)) throw std::invalid_argument("timeout_s must be > 0");
                py::gil_scoped_release nogil;
                self.resident_stop(timeout_s);
            },
            py::arg("timeout_s") = 2.0,
            "Stop the persistent kernel: set its stop flag and wait for it up to timeout_s (gemmpad.errors.CudaError "
            "on timeout, never a hang). Idempotent; deleting the Mlp stops it too.")
        .def_property_readonly("resident_running", &Mlp::resident_running,
                               "Whether cuda.mlp_resident's persistent kernel is running.")
        .def_property_readonly("resident_idle", &Mlp::resident_idle,
                               "Whether the persistent kernel returned after idling (the next call starts it again).")
        .def_property_readonly("resident_blocks", &Mlp::resident_blocks,
                               "Blocks of the running persistent kernel: 4 (a cluster holding W1 in shared memory) or "
                               "1; 0 when none runs.")
        .def(
            "set_staging",
            [](Mlp& self, size_t min_bytes, size_t chunk_bytes, int threads, int mapped_u8_rows, int mapped_out_rows,
               size_t mapped_split_bytes, size_t out_split_bytes, int spin_us) {
                self.set_staging({min_bytes, chunk_bytes, threads, mapped_u8_rows, mapped_out_rows, mapped_split_bytes,
                                  out_split_bytes, spin_us});
            },
            py::arg("min_bytes"), py::arg("chunk_bytes"), py::arg("threads"),
            py::arg("mapped_u8_rows") = Mlp::kMappedU8Rows, py::arg("mapped_out_rows") = Mlp::kMappedOutRows,
            py::arg("mapped_split_bytes") = Mlp::kMappedSplitBytes, py::arg("out_split_bytes") = Mlp::kOutSplitBytes,
            py::arg("spin_us") = Mlp::kSpinUs,
            "How forward() moves data: x of at least min_bytes goes to the GPU in chunks of chunk_bytes over "
            "`threads` host threads, host copies overlapping DMAs; 8-bit x of up to mapped_u8_rows rows is read "
            "in place through the mapping; up to mapped_out_rows rows the fused kernels write the probabilities "
            "to mapped memory (its pinned copy split over the threads beyond mapped_split_bytes); outputs of at "
            "least out_split_bytes go to the caller's arrays over the threads too, "
            "which look for the next job for spin_us after each before they sleep. Default: Mlp.staging of a new "
            "Mlp. For tests and measurements.")
        .def_property_readonly(
            "staging",
            [](const Mlp& self) {
                const Mlp::Staging s = self.staging();
                py::dict d;
                d["min_bytes"] = s.min_bytes;
                d["chunk_bytes"] = s.chunk_bytes;
                d["threads"] = s.threads;
                d["mapped_u8_rows"] = s.mapped_u8_rows;
                d["mapped_out_rows"] = s.mapped_out_rows;
                d["mapped_split_bytes"] = s.mapped_split_bytes;
                d["out_split_bytes"] = s.out_split_bytes;
                d["spin_us"] = s.spin_us;
                return d;
            },
            "The data-movement policy in force (set_staging's arguments).");
    m.def(
        "mem_info",
        [] {
            size_t free = 0, total = 0;
            CUDA_CHECK(cudaMemGetInfo(&free, &total));
            return std::make_pair(free, total);
        },
        "(free, total) device memory in bytes, for leak checks.");
    m.def("set_fused_clusters", &set_fused_clusters, py::arg("enabled"),
          "Let the fused kernels use thread-block clusters where possible (default True); False runs their "
          "sm_80-89 path (global partials + last block) on sm_90 too, for tests. Returns the previous value.");
    m.def("fused_used_clusters", &fused_used_clusters, "Whether the last split-kernel launch used clusters.");
    m.def(
        "mlp_kernels",
        [] {
            py::list out;
            for (const auto& k : mlp_kernel_list()) {
                py::dict d;
                d["name"] = k.name;
                d["precision"] = k.precision;
                d["in_type"] = "f32";
                d["summary"] = k.summary;
                d["source"] = k.source;
                out.append(d);
            }
            return out;
        },
        "The whole-network CUDA kernels (usable through Mlp.forward).");
}

}  // namespace gemmpad::cuda
