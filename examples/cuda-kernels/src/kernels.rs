//! One `#[lazy_kernel]` declaration per blob: the C signature of the blob's
//! host launcher. The first call of each compiles its blob with `nvcc` (or
//! loads it from the disk cache); every launcher returns a `cudaError_t`
//! (0 on success). Matrices are row-major.
//!
//! These are the raw entry points; [`saxpy`](crate::saxpy),
//! [`softmax_rows`](crate::softmax_rows) and [`sgemm`](crate::sgemm) are the
//! safe API over them.

use std::os::raw::c_int;

use ck_jit_macros::lazy_kernel;

#[lazy_kernel]
extern "C" {
    /// `y = a * x + y` over `n` floats.
    pub fn saxpy_f32(a: f32, x: *const f32, y: *mut f32, n: usize) -> c_int;
    /// Softmax of each row of a `rows x cols` matrix.
    pub fn softmax_f32(input: *const f32, out: *mut f32, rows: usize, cols: usize) -> c_int;
    /// `c = a * b` (`m x k` times `k x n`), 8 x 8 tiles.
    pub fn sgemm_f32_t8(
        a: *const f32,
        b: *const f32,
        c: *mut f32,
        m: usize,
        n: usize,
        k: usize,
    ) -> c_int;
    /// `c = a * b` (`m x k` times `k x n`), 16 x 16 tiles.
    pub fn sgemm_f32_t16(
        a: *const f32,
        b: *const f32,
        c: *mut f32,
        m: usize,
        n: usize,
        k: usize,
    ) -> c_int;
    /// `c = a * b` (`m x k` times `k x n`), 32 x 32 tiles.
    pub fn sgemm_f32_t32(
        a: *const f32,
        b: *const f32,
        c: *mut f32,
        m: usize,
        n: usize,
        k: usize,
    ) -> c_int;
}

/// Launchers over device memory on a caller's stream (`cudaStream_t` as
/// `*mut c_void`): they launch and return the launch status without
/// synchronising, so a CUDA graph capture records them. The
/// `graph-capture` program uses them.
pub mod stream {
    use std::os::raw::{c_int, c_void};

    use ck_jit_macros::lazy_kernel;

    #[lazy_kernel]
    extern "C" {
        /// `y = a * y` over `n` floats.
        pub fn scale_f32_stream(a: f32, y: *mut f32, n: usize, stream: *mut c_void) -> c_int;
        /// `y = y + x` over `n` floats.
        pub fn add_f32_stream(x: *const f32, y: *mut f32, n: usize, stream: *mut c_void) -> c_int;
        /// `y = a * x + b * y` over `n` floats.
        pub fn axpby_f32_stream(
            a: f32,
            x: *const f32,
            b: f32,
            y: *mut f32,
            n: usize,
            stream: *mut c_void,
        ) -> c_int;
    }
}

/// Host-side CUDA calls (device, streams, memory, copies, graph capture)
/// from the `cuda_host` blob, so a program links no CUDA library. Each
/// returns a `cudaError_t` (0 on success) except [`host::ckx_error_name()`].
pub mod host {
    use std::os::raw::{c_char, c_int, c_void};

    use ck_jit_macros::lazy_kernel;

    #[lazy_kernel]
    extern "C" {
        /// The current device's ordinal, compute capability and name.
        #[lazy_kernel(blob = "cuda_host", symbol = "ckx_device")]
        pub fn ckx_device(
            ordinal: *mut c_int,
            major: *mut c_int,
            minor: *mut c_int,
            name: *mut c_char,
            name_len: usize,
        ) -> c_int;
        /// The text of a `cudaError_t`.
        #[lazy_kernel(blob = "cuda_host", symbol = "ckx_error_name")]
        pub fn ckx_error_name(status: c_int) -> *const c_char;
        /// A new non-blocking stream.
        #[lazy_kernel(blob = "cuda_host", symbol = "ckx_stream_create")]
        pub fn ckx_stream_create(stream: *mut *mut c_void) -> c_int;
        /// Waits for a stream.
        #[lazy_kernel(blob = "cuda_host", symbol = "ckx_stream_sync")]
        pub fn ckx_stream_sync(stream: *mut c_void) -> c_int;
        /// `cudaMalloc`.
        #[lazy_kernel(blob = "cuda_host", symbol = "ckx_malloc")]
        pub fn ckx_malloc(ptr: *mut *mut c_void, bytes: usize) -> c_int;
        /// `cudaFree`.
        #[lazy_kernel(blob = "cuda_host", symbol = "ckx_free")]
        pub fn ckx_free(ptr: *mut c_void) -> c_int;
        /// Host to device copy.
        #[lazy_kernel(blob = "cuda_host", symbol = "ckx_upload")]
        pub fn ckx_upload(dst: *mut c_void, src: *const c_void, bytes: usize) -> c_int;
        /// Device to host copy.
        #[lazy_kernel(blob = "cuda_host", symbol = "ckx_download")]
        pub fn ckx_download(dst: *mut c_void, src: *const c_void, bytes: usize) -> c_int;
        /// Starts a global-mode capture on a stream.
        #[lazy_kernel(blob = "cuda_host", symbol = "ckx_begin_capture")]
        pub fn ckx_begin_capture(stream: *mut c_void) -> c_int;
        /// 0: not capturing, 1: capturing, 2: invalidated.
        #[lazy_kernel(blob = "cuda_host", symbol = "ckx_capture_status")]
        pub fn ckx_capture_status(stream: *mut c_void, status: *mut c_int) -> c_int;
        /// Ends the capture and instantiates the graph.
        #[lazy_kernel(blob = "cuda_host", symbol = "ckx_end_capture")]
        pub fn ckx_end_capture(
            stream: *mut c_void,
            exec: *mut *mut c_void,
            nodes: *mut usize,
        ) -> c_int;
        /// Launches an instantiated graph on a stream.
        #[lazy_kernel(blob = "cuda_host", symbol = "ckx_graph_launch")]
        pub fn ckx_graph_launch(exec: *mut c_void, stream: *mut c_void) -> c_int;
    }
}
