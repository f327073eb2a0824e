//! A manifest compiled into the downstream crate (`embed_manifest!()`),
//! parsed on the first cold call, never on the warm path.

use ck_jit_manifest::Manifest;
use once_cell::sync::OnceCell;

use crate::error::Error;
use crate::runtime::Runtime;

/// A manifest embedded as text, with the runtime built from it on first use.
pub struct Embedded {
    json: &'static str,
    runtime: OnceCell<Result<Runtime, Error>>,
}

impl std::fmt::Debug for Embedded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedded")
            .field("bytes", &self.json.len())
            .finish()
    }
}

impl Embedded {
    /// Wraps manifest text (usually `include_str!` of the build's output).
    pub const fn from_json_str(json: &'static str) -> Embedded {
        Embedded {
            json,
            runtime: OnceCell::new(),
        }
    }

    /// The runtime over this manifest (parsed and validated once).
    pub fn runtime(&'static self) -> Result<&'static Runtime, Error> {
        self.runtime
            .get_or_init(|| {
                let m = Manifest::from_json(self.json).map_err(|error| Error::Manifest {
                    origin: "embedded in this binary".into(),
                    error,
                })?;
                Ok(Runtime::new(m, "embedded"))
            })
            .as_ref()
            .map_err(Clone::clone)
    }
}
