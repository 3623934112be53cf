// Bindings beside the GEMM registry. Each part of the CUDA module that is
// more than a GEMM kernel (the MLP forward pass, the training engine) adds
// its binder call here.
#include "bind.h"

namespace gemmpad::cuda {

void bind_mlp(pybind11::module_& m);    // mlp/bind_mlp.cpp
void bind_train(pybind11::module_& m);  // train/bind_train.cpp

void bind_extras(pybind11::module_& m) {
    bind_mlp(m);
    bind_train(m);
}

}  // namespace gemmpad::cuda
