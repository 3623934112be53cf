// gemmpad._cpu.Mlp: the network's weights held in C++, and a forward pass that
// runs a whole-network kernel (cpu.mlp_sparse, mlp_sparse.cpp; cpu.mlp_amx,
// mlp_amx.cpp) or any CPU GEMM kernel of the registry layer by layer, so the app
// can walk the ladder live.
//
// The object owns everything one call needs: weights copied in once (row-major
// for the GEMM kernels, padded for the sparse kernel, as bf16 tiles for the AMX
// one the first time it runs) and hidden-layer scratch
// that only grows, so a call at an already-seen batch size allocates nothing.
// The binding validates every array (ValueError with the shapes, never a
// crash), then releases the GIL; a mutex makes concurrent calls on one object
// safe (they share the scratch), not parallel.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <chrono>
#include <cmath>
#include <mutex>
#include <string>
#include <vector>

#include "../cpu.h"
#include "gemmpad/gil.h"
#include "mlp.h"

namespace py = pybind11;

namespace gemmpad::cpu::mlp {
namespace {

const char* const kSparseName = "cpu.mlp_sparse";
const char* const kAmxName = "cpu.mlp_amx";

// What runs a forward pass: a whole-network kernel, or a GEMM kernel for each layer.
enum class Path { Sparse, Tiles, Gemm };

// A row-major [rows, cols] copy padded to [rows, padded_cols] with zeros.
void copy_padded(const float* src, int rows, int cols, int padded_cols, float* dst) {
    for (int r = 0; r < rows; ++r) {
        std::copy(src + (size_t)r * cols, src + (size_t)(r + 1) * cols, dst + (size_t)r * padded_cols);
        std::fill(dst + (size_t)r * padded_cols + cols, dst + (size_t)(r + 1) * padded_cols, 0.0f);
    }
}

bool all_finite(const float* p, size_t n) {
    for (size_t i = 0; i < n; ++i)
        if (!std::isfinite(p[i])) return false;
    return true;
}

class Mlp {
  public:
    // Arrays: W1 [784,100], b1 [100], W2 [100,100], b2 [100], W3 [100,10], b3 [10], float32 contiguous.
    Mlp(const float* W1, const float* b1, const float* W2, const float* b2, const float* W3, const float* b3)
        : W1_(W1, W1 + kIn * kH1), b1_(b1, b1 + kH1), W2_(W2, W2 + kH1 * kH2), b2_(b2, b2 + kH2),
          W3_(W3, W3 + kH2 * kOut), b3_(b3, b3 + kOut) {
        float* p = padded_.get((size_t)kIn * kH1P + kH1P + (size_t)kH1 * kH2P + kH2P + (size_t)kH2 * kOutP + kOutP);
        auto take = [&p](size_t n) { float* q = p; p += n; return q; };
        float *w1 = take((size_t)kIn * kH1P), *pb1 = take(kH1P), *w2 = take((size_t)kH1 * kH2P), *pb2 = take(kH2P),
              *w3 = take((size_t)kH2 * kOutP), *pb3 = take(kOutP);
        copy_padded(W1, kIn, kH1, kH1P, w1);
        copy_padded(b1, 1, kH1, kH1P, pb1);
        copy_padded(W2, kH1, kH2, kH2P, w2);
        copy_padded(b2, 1, kH2, kH2P, pb2);
        copy_padded(W3, kH2, kOut, kOutP, w3);
        copy_padded(b3, 1, kOut, kOutP, pb3);
        sparse_ = SparseWeights{w1, pb1, w2, pb2, w3, pb3, all_finite(W1, (size_t)kIn * kH1),
                                all_finite(W2, (size_t)kH1 * kH2), all_finite(W3, (size_t)kH2 * kOut)};
    }

    // probs [batch, 10] from x [batch, 784]; returns the compute time in microseconds.
    // `gemm` is the registry kernel used for each layer on Path::Gemm (else unused).
    // hidden.h1 / h2, where given, receive the activations this very pass computed: the GEMM
    // path writes its layer outputs straight into them, the sparse path copies each row's.
    double forward(Input x, float* probs, int batch, Path path, const CpuRegistry::Entry* gemm, Hidden hidden) {
        std::lock_guard<std::mutex> lock(mu_);
        if (path == Path::Tiles && tiles_.W1.empty())  // packed once, outside the timed region
            tiles_ = pack_tile_weights(W1_.data(), W2_.data(), W3_.data(), sparse_);
        const auto t0 = std::chrono::steady_clock::now();
        if (path == Path::Sparse) {
            sparse_forward(sparse_, x, probs, batch, hidden);
        } else if (path == Path::Tiles) {
            tile_forward(tiles_, x, probs, batch, hidden);
        } else {
            const float* xf = x.f32;
            if (x.u8) {  // the GEMM kernels take float rows: scale the pixels into scratch first
                float* dst = x32_.get((size_t)batch * kIn);
                const size_t n = (size_t)batch * kIn;
                for (size_t i = 0; i < n; ++i) dst[i] = (float)x.u8[i] * kPixelScale;
                xf = dst;
            }
            float* h1 = hidden.h1 ? hidden.h1 : h1_.get((size_t)batch * kH1);
            float* h2 = hidden.h2 ? hidden.h2 : h2_.get((size_t)batch * kH2);
            layer(*gemm, batch, kH1, kIn, xf, W1_.data(), b1_.data(), h1, Act::Relu);
            const auto l1 = std::chrono::steady_clock::now();
            layer(*gemm, batch, kH2, kH1, h1, W2_.data(), b2_.data(), h2, Act::Relu);
            const auto l2 = std::chrono::steady_clock::now();
            layer(*gemm, batch, kOut, kH2, h2, W3_.data(), b3_.data(), probs, Act::None);
            const auto l3 = std::chrono::steady_clock::now();
            softmax_rows(probs, batch);
            layer_us_ = {us(t0, l1), us(l1, l2), us(l2, l3)};
        }
        const auto t1 = std::chrono::steady_clock::now();
        if (path != Path::Gemm) layer_us_ = {};
        return us(t0, t1);
    }

    // Each layer's time in the last forward() on the GEMM path (the window shows where the
    // time goes); empty after a whole-network kernel, which runs the layers interleaved.
    std::vector<double> layer_us() {
        std::lock_guard<std::mutex> lock(mu_);
        return layer_us_;
    }

  private:
    static double us(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
        return std::chrono::duration<double, std::micro>(b - a).count();
    }

    static void layer(const CpuRegistry::Entry& k, int M, int N, int K, const float* A, const float* B,
                      const float* bias, float* C, Act act) {
        GemmProblem p;
        p.M = M;
        p.N = N;
        p.K = K;
        p.A = A;
        p.B = B;
        p.bias = bias;
        p.C = C;
        p.act = act;
        k.launch(p);
    }

    std::vector<float> W1_, b1_, W2_, b2_, W3_, b3_;  // row-major, for the GEMM ladder
    GrowBuffer padded_;                                // padded copies, for cpu.mlp_sparse
    SparseWeights sparse_{};
    TileWeights tiles_;                                // bf16 tiles, for cpu.mlp_amx (empty until it runs)
    GrowBuffer h1_, h2_;                               // hidden activations of the GEMM path (when not asked for)
    GrowBuffer x32_;                                   // 8-bit input as floats, for the GEMM path
    std::vector<double> layer_us_;                     // see layer_us()
    std::mutex mu_;
};

// ------------------------------------------------------------------ binding

std::string shape_str(const py::array& a) {
    std::string s = "(";
    for (py::ssize_t i = 0; i < a.ndim(); ++i) s += (i ? ", " : "") + std::to_string(a.shape(i));
    return s + (a.ndim() == 1 ? ",)" : ")");
}

// `what` must be a C-contiguous float32 (u8: uint8) array of exactly `shape` (-1: any size >= 1).
py::array check_array(const py::object& obj, const char* what, std::initializer_list<py::ssize_t> shape,
                      bool writeable = false, bool u8 = false) {
    if (!py::isinstance<py::array>(obj))
        throw py::value_error(std::string(what) + " must be a NumPy array, got " +
                              std::string(py::str(py::type::of(obj).attr("__name__"))));
    auto a = py::reinterpret_borrow<py::array>(obj);
    static const int f32 = py::dtype::of<float>().num(), u8num = py::dtype::of<uint8_t>().num();
    if (a.dtype().num() != (u8 ? u8num : f32))
        throw py::value_error(std::string(what) + " must be " + (u8 ? "uint8" : "float32") + ", got " +
                              std::string(py::str(a.dtype())));
    bool ok = a.ndim() == (py::ssize_t)shape.size();
    size_t i = 0;
    for (auto d : shape) {
        if (!ok) break;
        ok = d < 0 ? a.shape(i) >= 1 : a.shape(i) == d;
        ++i;
    }
    if (!ok) {
        std::string want = "(";
        i = 0;
        for (auto d : shape) want += (i++ ? ", " : "") + (d < 0 ? std::string("B") : std::to_string(d));
        want += shape.size() == 1 ? ",)" : ")";
        throw py::value_error(std::string(what) + " must have shape " + want + ", got " + shape_str(a));
    }
    if (!(a.flags() & py::array::c_style))
        throw py::value_error(std::string(what) + " must be C-contiguous (use np.ascontiguousarray)");
    if (writeable && !a.writeable()) throw py::value_error(std::string(what) + " must be writeable");
    return a;
}

const float* fdata(const py::array& a) { return static_cast<const float*>(a.data()); }

bool overlap(const py::array& a, const py::array& b) {
    const char* pa = static_cast<const char*>(a.data());
    const char* pb = static_cast<const char*>(b.data());
    return pa < pb + b.nbytes() && pb < pa + a.nbytes();
}

// forward / forward_u8: every array checked (shapes, dtypes, no output overlapping another array),
// then the pass without the GIL.
double run_forward(Mlp& self, const py::object& x_obj, bool u8, const py::object& out_obj, const std::string& kernel,
                   const py::object& h1_obj, const py::object& h2_obj) {
    const py::array x = check_array(x_obj, "x", {-1, kIn}, false, u8);
    py::array out = check_array(out_obj, "out", {-1, kOut}, true);
    const py::ssize_t batch = x.shape(0);
    if (out.shape(0) != batch)
        throw py::value_error("out must have shape (" + std::to_string(batch) + ", 10) for x of shape " +
                              shape_str(x) + ", got " + shape_str(out));
    if (batch > 0x7fffffff / kIn) throw py::value_error("x has too many rows: " + shape_str(x));
    if (overlap(out, x)) throw py::value_error("out must not overlap x");
    std::vector<py::array> written{out};
    Hidden hidden;
    const std::pair<const py::object*, const char*> wanted[2] = {{&h1_obj, "h1"}, {&h2_obj, "h2"}};
    for (const auto& [obj, name] : wanted) {
        if (obj->is_none()) continue;
        py::array h = check_array(*obj, name, {-1, kH1}, true);
        if (h.shape(0) != batch)
            throw py::value_error(std::string(name) + " must have shape (" + std::to_string(batch) +
                                  ", 100) for x of shape " + shape_str(x) + ", got " + shape_str(h));
        if (overlap(h, x)) throw py::value_error(std::string(name) + " must not overlap x");
        for (const auto& w : written)
            if (overlap(h, w)) throw py::value_error(std::string(name) + " must not overlap another output array");
        written.push_back(h);
        (name[1] == '1' ? hidden.h1 : hidden.h2) = static_cast<float*>(h.mutable_data());
    }
    const CpuRegistry::Entry* gemm = nullptr;
    Path path = Path::Gemm;
    if (kernel == kSparseName) {
        path = Path::Sparse;
    } else if (kernel == kAmxName) {
        if (!amx_unavailable().empty())
            throw py::value_error(std::string("kernel 'cpu.mlp_amx' cannot run here: ") + amx_unavailable());
        path = Path::Tiles;
    } else {
        try {
            gemm = &CpuRegistry::instance().get(kernel);
        } catch (const std::invalid_argument& e) {
            throw py::value_error(std::string(e.what()) + ", " + kSparseName + ", " + kAmxName);
        }
    }
    Input in;
    if (u8) in.u8 = static_cast<const uint8_t*>(x.data());
    else in.f32 = fdata(x);
    float* probs = static_cast<float*>(out.mutable_data());
    const ReleaseGilFor nogil(batch);
    return self.forward(in, probs, (int)batch, path, gemm, hidden);
}

}  // namespace

void bind_mlp(py::module_& m) {
    py::class_<Mlp>(m, "Mlp",
                    "The 784-100-100-10 MLP with its weights copied into C++; forward() runs a whole-network kernel "
                    "(cpu.mlp_sparse, cpu.mlp_amx) or any CPU GEMM kernel of the registry.")
        .def(py::init([](const py::object& W1, const py::object& b1, const py::object& W2, const py::object& b2,
                         const py::object& W3, const py::object& b3) {
                 return new Mlp(fdata(check_array(W1, "W1", {kIn, kH1})), fdata(check_array(b1, "b1", {kH1})),
                                fdata(check_array(W2, "W2", {kH1, kH2})), fdata(check_array(b2, "b2", {kH2})),
                                fdata(check_array(W3, "W3", {kH2, kOut})), fdata(check_array(b3, "b3", {kOut})));
             }),
             py::arg("W1"), py::arg("b1"), py::arg("W2"), py::arg("b2"), py::arg("W3"), py::arg("b3"))
        .def(
            "forward",
            [](Mlp& self, const py::object& x, const py::object& out, const std::string& kernel,
               const py::object& h1, const py::object& h2) {
                return run_forward(self, x, false, out, kernel, h1, h2);
            },
            py::arg("x"), py::arg("out"), py::arg("kernel") = kSparseName, py::arg("h1") = py::none(),
            py::arg("h2") = py::none(),
            "out = softmax(MLP(x)) for x float32 [B, 784]; out float32 [B, 10] is overwritten. kernel: "
            "'cpu.mlp_sparse', 'cpu.mlp_amx' (where mlp_kernels() calls it available) or a CPU GEMM kernel "
            "of the registry (used for each layer). h1, h2: optional "
            "float32 [B, 100] arrays that receive the post-ReLU hidden activations this pass computed. Returns "
            "the compute time in microseconds (steady clock, excluding the Python call).")
        .def(
            "forward_u8",
            [](Mlp& self, const py::object& x, const py::object& out, const std::string& kernel,
               const py::object& h1, const py::object& h2) {
                return run_forward(self, x, true, out, kernel, h1, h2);
            },
            py::arg("x"), py::arg("out"), py::arg("kernel") = kSparseName, py::arg("h1") = py::none(),
            py::arg("h2") = py::none(),
            "forward() for 8-bit pixels: x uint8 [B, 784], read as x * float32(1/255) (what gemmpad.inputs.preprocess "
            "makes of uint8 images); cpu.mlp_sparse scales each row as it starts it, cpu.mlp_amx multiplies "
            "the integers and scales the sums, the GEMM kernels read a scaled copy.")
        .def("layer_us", &Mlp::layer_us,
             "Each layer's compute time (microseconds) in the last forward() with a GEMM kernel; [] after "
             "a whole-network kernel (it runs the layers interleaved).");

    m.def(
        "mlp_kernels",
        [] {
            const std::string dir = repo_path(__FILE__).substr(0, repo_path(__FILE__).rfind('/'));
            py::list out;
            // name, precision, source file, summary, why it cannot run here ("" where it can)
            const auto add = [&](const char* name, const char* precision, const char* file, const char* summary,
                                 const std::string& unavailable) {
                py::dict d;
                d["name"] = name, d["precision"] = precision, d["source"] = dir + file, d["summary"] = summary;
                d["unavailable_reason"] = unavailable;
                out.append(d);
            };
            add(kSparseName, "fp32", "/mlp_sparse.cpp",
                "whole network per input row, zero inputs' weight rows skipped, SIMD, softmax in C++", "");
            add(kAmxName, "bf16", "/mlp_amx.cpp",
                "whole network 16 rows at a time on AMX tiles: bf16 products, fp32 sums, softmax in C++",
                amx_unavailable());
            return out;
        },
        "The whole-network CPU kernels (kind 'mlp' in gemmpad.runtime.registry).");
}

}  // namespace gemmpad::cpu::mlp
