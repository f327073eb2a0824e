// Host-side CUDA calls for programs that link no CUDA library: streams,
// device memory, copies and graph capture, each returning the
// cudaError_t as an int. Stream, graph and pointer handles cross as void*;
// a cudaStream_t is the driver's CUstream, so streams made here are the
// streams other blobs launch on, whichever copy of the runtime they link.
#include <cuda_runtime.h>

#include <stddef.h>
#include <string.h>

extern "C" int ckx_device(int* ordinal, int* major, int* minor, char* name, size_t name_len) {
    int dev = 0;
    cudaError_t s = cudaGetDevice(&dev);
    if (s != cudaSuccess) {
        return s;
    }
    cudaDeviceProp prop;
    s = cudaGetDeviceProperties(&prop, dev);
    if (s != cudaSuccess) {
        return s;
    }
    *ordinal = dev;
    *major = prop.major;
    *minor = prop.minor;
    if (name_len > 0) {
        strncpy(name, prop.name, name_len - 1);
        name[name_len - 1] = '\0';
    }
    return cudaSuccess;
}

extern "C" const char* ckx_error_name(int status) {
    return cudaGetErrorString(static_cast<cudaError_t>(status));
}

extern "C" int ckx_stream_create(void** stream) {
    cudaStream_t s = nullptr;
    cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    *stream = s;
    return e;
}

extern "C" int ckx_stream_sync(void* stream) {
    return cudaStreamSynchronize(static_cast<cudaStream_t>(stream));
}

extern "C" int ckx_malloc(void** ptr, size_t bytes) { return cudaMalloc(ptr, bytes); }

extern "C" int ckx_free(void* ptr) { return cudaFree(ptr); }

extern "C" int ckx_upload(void* dst, const void* src, size_t bytes) {
    return cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
}

extern "C" int ckx_download(void* dst, const void* src, size_t bytes) {
    return cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost);
}

// Global mode: any unsafe CUDA call from any thread while capturing (an
// allocation, a synchronous copy, a module load) invalidates the capture.
extern "C" int ckx_begin_capture(void* stream) {
    return cudaStreamBeginCapture(static_cast<cudaStream_t>(stream), cudaStreamCaptureModeGlobal);
}

// 0: not capturing, 1: capturing, 2: the capture was invalidated.
extern "C" int ckx_capture_status(void* stream, int* status) {
    cudaStreamCaptureStatus s = cudaStreamCaptureStatusNone;
    cudaError_t e = cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &s);
    *status = s == cudaStreamCaptureStatusActive ? 1 : s == cudaStreamCaptureStatusInvalidated ? 2 : 0;
    return e;
}

// Ends the capture and instantiates the graph; `nodes` gets its node count.
extern "C" int ckx_end_capture(void* stream, void** exec, size_t* nodes) {
    cudaGraph_t graph = nullptr;
    cudaError_t e = cudaStreamEndCapture(static_cast<cudaStream_t>(stream), &graph);
    if (e != cudaSuccess) {
        return e;
    }
    *nodes = 0;
    e = cudaGraphGetNodes(graph, nullptr, nodes);
    if (e != cudaSuccess) {
        return e;
    }
    cudaGraphExec_t g = nullptr;
    e = cudaGraphInstantiate(&g, graph, 0);
    *exec = g;
    return e;
}

extern "C" int ckx_graph_launch(void* exec, void* stream) {
    return cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec), static_cast<cudaStream_t>(stream));
}
