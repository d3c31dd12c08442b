// This file implements the timing helper the benchmarks share.
#pragma once

#include "codegen/KernelIR.h"

#include <algorithm>
#include <chrono>

namespace dt::bench {

/// Best wall time of `reps` runs of f, in seconds.
template <class F> double best(int reps, F &&f) {
  double b = 1e30;
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    b = std::min(b, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return b;
}

/// y = min(|(max(x*a + b, c) - x)| * d + x, e): eight elementwise f32 ops
/// over a 1-D input (fused_bench on the CPU, cuda_bench on the GPU).
inline Kernel fused8Kernel() {
  Kernel k;
  k.name = "fused8";
  k.rank = 1;
  k.addInput(DType::F32);
  k.addOutput(DType::F32);
  int x = k.load(0);
  int v = k.binary(KOp::Mul, x, k.constant(1.0001, DType::F32));
  v = k.binary(KOp::Add, v, k.constant(0.5, DType::F32));
  v = k.binary(KOp::Maximum, v, k.constant(0.1, DType::F32));
  v = k.binary(KOp::Sub, v, x);
  v = k.unary(KOp::Abs, v);
  v = k.binary(KOp::Mul, v, k.constant(0.9, DType::F32));
  v = k.binary(KOp::Add, v, x);
  v = k.binary(KOp::Minimum, v, k.constant(7.0, DType::F32));
  k.store(0, v);
  return k;
}

} // namespace dt::bench
