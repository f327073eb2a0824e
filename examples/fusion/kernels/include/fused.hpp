// What every kernel of the family is made of: a row-major gemm and the
// element-wise operations it may fuse, each a small inline function so a
// fused kernel makes one pass over its output.
#pragma once

namespace fused {

// The sizes a kernel works on: y is m x n, x is m x k (m x n for the
// element-wise kernels), w is k x n.
struct Shape {
    int m, n, k;
};

template <typename T, typename Epilogue>
void gemm(const T* x, const T* w, T* y, int m, int n, int k, const T* bias, Epilogue epilogue) {
    for (int i = 0; i < m; ++i) {
        for (int j = 0; j < n; ++j) {
            T acc = 0;
            for (int p = 0; p < k; ++p) acc += x[i * k + p] * w[p * n + j];
            y[i * n + j] = epilogue(acc, bias, j);
        }
    }
}

template <typename T, typename Op>
void map(const T* x, T* y, int m, int n, const T* bias, Op op) {
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) y[i * n + j] = op(x[i * n + j], bias, j);
}

template <typename T> T none(T v, const T*, int) { return v; }
template <typename T> T bias(T v, const T* b, int j) { return v + b[j]; }
template <typename T> T relu(T v, const T*, int) { return v > 0 ? v : 0; }
template <typename T> T bias_relu(T v, const T* b, int j) { return relu(bias(v, b, j), b, j); }

}  // namespace fused
