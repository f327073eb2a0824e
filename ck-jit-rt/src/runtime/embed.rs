//! A manifest compiled into the downstream crate (`embed_manifest!()`):
//! the compact form the build wrote beside the JSON one, opened on the
//! first cold call and read in place (one blob's record per lookup), never
//! touched on the warm path.

use ck_jit_manifest::Manifest;
use once_cell::sync::OnceCell;

use crate::error::Error;
use crate::runtime::store::Store;
use crate::runtime::Runtime;

enum Form {
    Json(&'static str),
    Compact(&'static [u8]),
}

/// A manifest embedded in the binary, with the runtime built from it on
/// first use.
pub struct Embedded {
    form: Form,
    runtime: OnceCell<Runtime>,
}

impl std::fmt::Debug for Embedded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (form, bytes) = match self.form {
            Form::Json(j) => ("json", j.len()),
            Form::Compact(b) => ("compact", b.len()),
        };
        f.debug_struct("Embedded")
            .field("form", &form)
            .field("bytes", &bytes)
            .finish()
    }
}

const ORIGIN: &str = "embedded in this binary";

impl Embedded {
    /// Wraps manifest text (`include_str!` of the build's JSON output);
    /// parsed whole on first use.
    pub const fn from_json_str(json: &'static str) -> Embedded {
        Embedded {
            form: Form::Json(json),
            runtime: OnceCell::new(),
        }
    }

    /// Wraps the compact form (`include_bytes!` of the build's
    /// `ck_jit_manifest.ckm`, what [`embed_manifest!`](crate::embed_manifest)
    /// embeds): opening it reads a header, and each lookup decodes one
    /// blob's record.
    pub const fn from_compact(bytes: &'static [u8]) -> Embedded {
        Embedded {
            form: Form::Compact(bytes),
            runtime: OnceCell::new(),
        }
    }

    /// The runtime over this manifest (opened once; a failure to open it
    /// is not remembered, the next call tries again).
    pub fn runtime(&'static self) -> Result<&'static Runtime, Error> {
        self.runtime.get_or_try_init(|| {
            let store = match self.form {
                Form::Json(json) => Manifest::from_json(json).map(Store::Json),
                Form::Compact(bytes) => Store::compact(bytes),
            }
            .map_err(|error| Error::Manifest {
                origin: ORIGIN.into(),
                error,
            })?;
            Ok(Runtime::over(store, ORIGIN.to_string()))
        })
    }
}
