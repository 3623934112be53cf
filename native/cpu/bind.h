// Hooks for bindings that live beside the kernels (the MLP forward pass, CPU features).
#pragma once
#include <pybind11/pybind11.h>

namespace gemmpad::cpu {
// Defined in cpu/bind_extras.cpp: the Mlp class, mlp_kernels() and the CPU feature queries.
void bind_extras(pybind11::module_& m);
}  // namespace gemmpad::cpu
