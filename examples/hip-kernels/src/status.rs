//! [`HipStatus`]: a `hipError_t` returned by a launcher, with its name and
//! what it means, so a failure reads as more than a number.

use std::fmt;

/// A non-success `hipError_t` from a launcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HipStatus(i32);

/// Name and meaning of the statuses a launcher can return (HIP 5.x and 6.x
/// agree on these values).
const KNOWN: &[(i32, &str, &str)] = &[
    (1, "hipErrorInvalidValue", "an argument is invalid"),
    (2, "hipErrorOutOfMemory", "out of device memory"),
    (
        3,
        "hipErrorNotInitialized",
        "the HIP runtime failed to initialise",
    ),
    (
        9,
        "hipErrorInvalidConfiguration",
        "invalid launch configuration",
    ),
    (17, "hipErrorInvalidDevicePointer", "invalid device pointer"),
    (
        21,
        "hipErrorInvalidMemcpyDirection",
        "invalid memory copy direction",
    ),
    (
        35,
        "hipErrorInsufficientDriver",
        "the installed driver is too old for this runtime",
    ),
    (
        98,
        "hipErrorInvalidDeviceFunction",
        "the kernel was not built for this GPU's architecture",
    ),
    (100, "hipErrorNoDevice", "no HIP-capable GPU found"),
    (
        101,
        "hipErrorInvalidDevice",
        "invalid device ordinal; HIP's memory calls return it when there is no GPU",
    ),
    (
        200,
        "hipErrorInvalidImage",
        "the kernel image is invalid for this device",
    ),
    (
        209,
        "hipErrorNoBinaryForGpu",
        "the object has no code for this GPU's architecture (rebuild with HIP_KERNELS_ARCHS)",
    ),
    (
        400,
        "hipErrorInvalidHandle",
        "invalid stream or event handle",
    ),
    (
        700,
        "hipErrorIllegalAddress",
        "a kernel accessed an illegal address",
    ),
    (
        701,
        "hipErrorLaunchOutOfResources",
        "too many resources requested for the launch",
    ),
    (719, "hipErrorLaunchFailure", "the kernel failed"),
    (
        801,
        "hipErrorNotSupported",
        "the operation is not supported",
    ),
    (999, "hipErrorUnknown", "unknown error"),
];

impl HipStatus {
    /// The status with this `hipError_t` value.
    pub const fn from_code(code: i32) -> HipStatus {
        HipStatus(code)
    }

    /// The `hipError_t` value.
    pub const fn code(self) -> i32 {
        self.0
    }

    /// The enumerator's name (`hipErrorNoDevice`), where known.
    pub fn name(self) -> Option<&'static str> {
        KNOWN.iter().find(|k| k.0 == self.0).map(|k| k.1)
    }

    /// What it means, in words.
    pub fn meaning(self) -> &'static str {
        KNOWN
            .iter()
            .find(|k| k.0 == self.0)
            .map_or("a HIP status this crate does not know", |k| k.2)
    }

    /// Whether it says there is no GPU to run on (`hipErrorNoDevice`, or
    /// `hipErrorInvalidDevice`, which HIP's allocation and copy calls return
    /// when no device is present).
    pub fn is_no_device(self) -> bool {
        self.0 == 100 || self.0 == 101
    }
}

impl fmt::Display for HipStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "HIP status {} ({name}: {})", self.0, self.meaning()),
            None => write!(f, "HIP status {} ({})", self.0, self.meaning()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_code_enumerator_and_meaning() {
        let s = HipStatus::from_code(100).to_string();
        assert_eq!(
            s,
            "HIP status 100 (hipErrorNoDevice: no HIP-capable GPU found)"
        );
        let s = HipStatus::from_code(4242).to_string();
        assert!(
            s.starts_with("HIP status 4242 (") && s.contains("does not know"),
            "{s}"
        );
    }

    #[test]
    fn no_device_statuses_are_recognised() {
        assert!(HipStatus::from_code(100).is_no_device());
        assert!(HipStatus::from_code(101).is_no_device());
        assert!(!HipStatus::from_code(2).is_no_device());
    }
}
