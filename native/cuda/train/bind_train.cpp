// Python binding of the native trainer: gemmpad._cuda.Trainer.
// Shapes and dtypes are checked here (pybind11 would otherwise convert or
// copy silently); gemmpad.learn.train_native checks values (NaN, label range) and
// gives the friendlier messages.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <stdexcept>
#include <string>

#include "trainer.h"

namespace py = pybind11;

namespace gemmpad::cuda {

namespace {

using train::Trainer;
using F32 = py::array_t<float, py::array::c_style>;
using I32 = py::array_t<int32_t, py::array::c_style>;

constexpr const char* kNames[6] = {"W1", "b1", "W2", "b2", "W3", "b3"};
const std::vector<std::vector<py::ssize_t>> kShapes = {{784, 100}, {100}, {100, 100}, {100}, {100, 10}, {10}};

train::Hyper hyper(float lr, float momentum, float weight_decay, bool decay_biases) {
    return {lr, momentum, weight_decay, decay_biases ? weight_decay : 0.0f};
}

void require(bool ok, const std::string& msg) {
    if (!ok) throw py::value_error(msg);
}

train::Engine engine_named(const std::string& name) {
    if (name == "graph") return train::Engine::graph;
    if (name == "launches") return train::Engine::launches;
    if (name == "persistent") return train::Engine::persistent;
    throw py::value_error("engine must be 'graph', 'launches' or 'persistent', not '" + name + "'");
}

py::dict read(const Trainer& t, bool velocity) {
    std::vector<F32> arrays;
    std::vector<float*> ptrs;
    for (int i = 0; i < 6; ++i) {
        arrays.emplace_back(kShapes[i]);
        ptrs.push_back(arrays.back().mutable_data());
    }
    {
        py::gil_scoped_release nogil;
        t.read_params(ptrs, velocity);
    }
    py::dict d;
    for (int i = 0; i < 6; ++i) d[kNames[i]] = arrays[i];
    return d;
}

std::unique_ptr<Trainer> make(F32 x, I32 labels, py::dict params, int batch, bool mixed, py::object targets) {
    require(x.ndim() == 2 && x.shape(1) == 784, "x must have shape [N, 784]");
    require(labels.ndim() == 1 && labels.shape(0) == x.shape(0), "labels must have shape [N] matching x");
    F32 soft;
    if (!targets.is_none()) {
        soft = targets.cast<F32>();
        require(soft.ndim() == 2 && soft.shape(0) == x.shape(0) && soft.shape(1) == 10,
                "targets must have shape [N, 10] matching x");
    }
    require(x.shape(0) < (1 << 30), "too many rows");
    std::vector<F32> keep;
    std::vector<const float*> ptrs;
    for (int i = 0; i < 6; ++i) {
        require(params.contains(kNames[i]), std::string("missing parameter ") + kNames[i]);
        F32 a = params[kNames[i]].cast<F32>();
        std::vector<py::ssize_t> shape(a.shape(), a.shape() + a.ndim());
        require(shape == kShapes[i], std::string("parameter ") + kNames[i] + " has the wrong shape");
        keep.push_back(a);
        ptrs.push_back(a.data());
    }
    const float* xp = x.data();
    const int32_t* lp = labels.data();
    const float* tp = targets.is_none() ? nullptr : soft.data();
    const int n = (int)x.shape(0);
    py::gil_scoped_release nogil;
    return std::make_unique<Trainer>(xp, lp, n, ptrs, batch, mixed, tp);
}

}  // namespace

void bind_train(py::module_& m) {
    py::class_<Trainer> cls(m, "Trainer",
                            "Native CUDA trainer of the 784-100-100-10 MLP (see native/cuda/train/train.cuh).");
    cls.attr("persistent_max_batch") = train::PERSISTENT_MAX_BATCH;
    cls
        .def(py::init(&make), py::arg("x"), py::arg("labels"), py::arg("params"), py::arg("batch"),
             py::arg("mixed") = false, py::arg("targets") = py::none(),
             "Uploads x [N,784] f32, labels [N] i32, the params dict and targets (None, or [N,10] f32 soft "
             "targets the loss is taken against instead of the labels); allocates every buffer.")
        .def(
            "epoch",
            [](Trainer& t, I32 perm, float lr, float momentum, float weight_decay, const std::string& engine,
               bool decay_biases) {
                require(perm.ndim() == 1 && perm.shape(0) == t.n(), "perm must have shape [N]");
                const int32_t* p = perm.data();
                const train::Engine e = engine_named(engine);
                train::EpochResult r;
                {
                    py::gil_scoped_release nogil;
                    r = t.epoch(p, hyper(lr, momentum, weight_decay, decay_biases), e);
                }
                py::dict d;
                d["loss"] = r.loss;
                d["accuracy"] = r.accuracy;
                d["gpu_ms"] = r.gpu_ms;
                return d;
            },
            py::arg("perm"), py::arg("lr"), py::arg("momentum"), py::arg("weight_decay"), py::arg("engine") = "graph",
            py::arg("decay_biases") = true,
            "One epoch in the order perm; returns {loss, accuracy, gpu_ms}. engine: 'graph' (the step's launches "
            "replayed from a CUDA graph), 'launches' (the same launches one by one) or 'persistent' (one "
            "launch for the epoch where persistent_available; batches up to persistent_max_batch). "
            "decay_biases=False exempts b1..b3 from the weight decay (the default, True, is torch.optim.SGD "
            "over all parameters).")
        .def(
            "step",
            [](Trainer& t, I32 idx, float lr, float momentum, float weight_decay, bool decay_biases) {
                require(idx.ndim() == 1 && idx.shape(0) >= 1 && idx.shape(0) <= t.batch(),
                        "idx must be 1-D with 1..batch entries");
                const int32_t* p = idx.data();
                const int rows = (int)idx.shape(0);
                py::gil_scoped_release nogil;
                t.step(p, rows, hyper(lr, momentum, weight_decay, decay_biases));
            },
            py::arg("idx"), py::arg("lr"), py::arg("momentum"), py::arg("weight_decay"), py::arg("decay_biases") = true,
            "One SGD step on rows idx (no graph).")
        .def("weights", [](const Trainer& t) { return read(t, false); }, "Current parameters (host copies).")
        .def("velocities", [](const Trainer& t) { return read(t, true); }, "Current momentum buffers.")
        .def(
            "samples",
            [](const Trainer& t) {
                F32 loss(t.n()), correct(t.n());
                float* lp = loss.mutable_data();
                float* cp = correct.mutable_data();
                {
                    py::gil_scoped_release nogil;
                    t.read_samples(lp, cp);
                }
                return py::make_tuple(loss, correct);
            },
            "(loss, correct) per sample of the last epoch, in batch order.")
        .def(
            "profile",
            [](Trainer& t, int reps) {
                py::gil_scoped_release nogil;
                return t.profile(reps);
            },
            py::arg("reps") = 200, "Mean microseconds per kernel launch of a full-batch step.")
        .def_property_readonly("persistent_available", &Trainer::persistent_available,
                               "Whether the persistent engine runs here (fp32, this GPU; batches up to "
                               "persistent_max_batch).")
        .def_property_readonly("n", &Trainer::n)
        .def_property_readonly("batch", &Trainer::batch)
        .def_property_readonly("mixed", &Trainer::mixed);
}

}  // namespace gemmpad::cuda
