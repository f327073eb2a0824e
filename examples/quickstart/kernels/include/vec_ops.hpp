// The templated operations every quickstart blob instantiates once.
#pragma once
#include <cstddef>

namespace quick {

template <typename T>
void vadd(const T* a, const T* b, T* out, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

template <typename T>
void saxpy(T alpha, const T* x, T* y, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) y[i] = alpha * x[i] + y[i];
}

template <typename T>
T dot(const T* a, const T* b, std::size_t n) {
    T acc = T(0);
    for (std::size_t i = 0; i < n; ++i) acc += a[i] * b[i];
    return acc;
}

}  // namespace quick
