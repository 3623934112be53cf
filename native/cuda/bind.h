// Hooks for bindings that live beside the kernels (MLP forward pass, training).
#pragma once
#include <pybind11/pybind11.h>

namespace gemmpad::cuda {
// Defined in cuda/bind_extras.cpp; it calls the binders of the MLP and training code.
void bind_extras(pybind11::module_& m);
}  // namespace gemmpad::cuda
