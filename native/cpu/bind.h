// Hooks for bindings that live beside the kernels (the MLP forward pass, CPU features).
#pragma once
#include <pybind11/pybind11.h>

namespace gemmpad::cpu {
// Defined in cpu/mlp/bind_mlp.cpp: the Mlp class and cpu_features().
void bind_extras(pybind11::module_& m);
}  // namespace gemmpad::cpu
