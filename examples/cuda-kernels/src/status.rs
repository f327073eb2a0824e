//! [`CudaStatus`]: a `cudaError_t` returned by a launcher, with its name and
//! what it means.

use std::fmt;

/// A non-success `cudaError_t` from a launcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CudaStatus(i32);

/// Name and meaning of the statuses a launcher is likely to return.
const KNOWN: &[(i32, &str, &str)] = &[
    (
        1,
        "cudaErrorInvalidValue",
        "an argument is invalid (or a size is too large)",
    ),
    (2, "cudaErrorMemoryAllocation", "out of device memory"),
    (
        3,
        "cudaErrorInitializationError",
        "the CUDA runtime failed to initialise",
    ),
    (
        9,
        "cudaErrorInvalidConfiguration",
        "invalid launch configuration",
    ),
    (
        35,
        "cudaErrorInsufficientDriver",
        "the driver is older than the CUDA runtime the blob was built with",
    ),
    (
        98,
        "cudaErrorInvalidDeviceFunction",
        "the kernel was not built for this GPU",
    ),
    (100, "cudaErrorNoDevice", "no CUDA-capable GPU found"),
    (101, "cudaErrorInvalidDevice", "invalid device ordinal"),
    (
        200,
        "cudaErrorInvalidKernelImage",
        "the kernel image is invalid for this device",
    ),
    (
        209,
        "cudaErrorNoKernelImageForDevice",
        "no code for this GPU's architecture (rebuild with CUDA_KERNELS_ARCH)",
    ),
    (
        222,
        "cudaErrorUnsupportedPtxVersion",
        "the driver is too old for the PTX in the blob",
    ),
    (
        700,
        "cudaErrorIllegalAddress",
        "a kernel accessed an illegal address",
    ),
    (
        701,
        "cudaErrorLaunchOutOfResources",
        "too many resources requested for the launch",
    ),
    (719, "cudaErrorLaunchFailure", "the kernel failed"),
    (
        803,
        "cudaErrorSystemDriverMismatch",
        "driver and kernel module versions differ",
    ),
    (999, "cudaErrorUnknown", "unknown error"),
];

impl CudaStatus {
    /// The status with this `cudaError_t` value.
    pub const fn from_code(code: i32) -> CudaStatus {
        CudaStatus(code)
    }

    /// The `cudaError_t` value.
    pub const fn code(self) -> i32 {
        self.0
    }

    /// The enumerator's name (`cudaErrorNoDevice`), where known.
    pub fn name(self) -> Option<&'static str> {
        KNOWN.iter().find(|k| k.0 == self.0).map(|k| k.1)
    }

    /// What it means, in words.
    pub fn meaning(self) -> &'static str {
        KNOWN
            .iter()
            .find(|k| k.0 == self.0)
            .map_or("a CUDA status this crate does not know", |k| k.2)
    }
}

impl fmt::Display for CudaStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "CUDA status {} ({name}: {})", self.0, self.meaning()),
            None => write!(f, "CUDA status {} ({})", self.0, self.meaning()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_code_enumerator_and_meaning() {
        assert_eq!(
            CudaStatus::from_code(100).to_string(),
            "CUDA status 100 (cudaErrorNoDevice: no CUDA-capable GPU found)"
        );
        assert!(CudaStatus::from_code(12345)
            .to_string()
            .contains("does not know"));
    }
}
