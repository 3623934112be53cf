// When the MLP forward() bindings of both modules let other Python threads run.
#pragma once

#include <pybind11/pybind11.h>

#include <optional>

namespace gemmpad {

// A forward pass of this many rows or fewer takes microseconds, and keeps the GIL. A thread
// that gives the GIL up has to get it back when the call returns, and may wait for another
// Python thread (the app's window) to hand it over, up to the interpreter's switch interval
// (5 ms). In the app on the 2-core development VM (cpu.mlp_sparse, batch 1, cold, the
// screenshot's strokes replayed, 2026-11-23: five runs released, eight kept) the end-to-end p99
// went from 1.16-1.76 ms to 59-83 us, and the median from 45-75 to 37-44 us.
constexpr long kKeepGilRows = 16;

// Releases the GIL for its scope when the call has more than kKeepGilRows rows.
class ReleaseGilFor {
  public:
    explicit ReleaseGilFor(long rows) {
        if (rows > kKeepGilRows) release_.emplace();
    }

  private:
    std::optional<pybind11::gil_scoped_release> release_;
};

}  // namespace gemmpad
