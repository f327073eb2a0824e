// Tiled single-precision matrix multiply, C = A * B (row-major, A is m x k,
// B is k x n), one TILE x TILE block of threads per TILE x TILE tile of C,
// staging tiles of A and B in shared memory. Edges are bounds-checked, so
// any size works; sizes that TILE divides waste no threads.
#pragma once

#include "cuda_kernels.cuh"

template <int TILE>
__global__ void __launch_bounds__(TILE * TILE)
    sgemm_tiled(const float* a, const float* b, float* c, int m, int n, int k) {
    __shared__ float as[TILE][TILE];
    __shared__ float bs[TILE][TILE + 1];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int t = 0; t < k; t += TILE) {
        as[ty][tx] = (row < m && t + tx < k) ? a[static_cast<size_t>(row) * k + t + tx] : 0.0f;
        bs[ty][tx] = (t + ty < k && col < n) ? b[static_cast<size_t>(t + ty) * n + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int i = 0; i < TILE; ++i) {
            acc += as[ty][i] * bs[i][tx];
        }
        __syncthreads();
    }
    if (row < m && col < n) {
        c[static_cast<size_t>(row) * n + col] = acc;
    }
}

template <int TILE>
cudaError_t sgemm(const float* a, const float* b, float* c, size_t m, size_t n, size_t k) {
    if (m == 0 || n == 0) {
        return cudaSuccess;
    }
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX) {
        return cudaErrorInvalidValue;
    }
    ckx::DeviceBuffer<float> da, db, dc;
    CK_TRY(da.alloc(m * k + 1));
    CK_TRY(db.alloc(k * n + 1));
    CK_TRY(dc.alloc(m * n));
    CK_TRY(da.upload(a, m * k));
    CK_TRY(db.upload(b, k * n));
    dim3 block(TILE, TILE);
    dim3 grid(static_cast<unsigned>((n + TILE - 1) / TILE), static_cast<unsigned>((m + TILE - 1) / TILE));
    sgemm_tiled<TILE><<<grid, block>>>(da.ptr, db.ptr, dc.ptr, static_cast<int>(m), static_cast<int>(n),
                                       static_cast<int>(k));
    CK_TRY(cudaGetLastError());
    CK_TRY(dc.download(c, m * n));
    return cudaSuccess;
}
