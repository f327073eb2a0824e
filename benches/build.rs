//! Records how to compile the warm-dispatch bench's kernel (`kernels/`)
//! and compiles nothing: the runtime compiles it with the system `cc` on
//! its first call, as in any downstream crate.

use ck_jit_build::{BlobGroup, Build};

fn main() {
    Build::new()
        .name("ck_jit_benches")
        .group(
            BlobGroup::new("c")
                .glob("kernels/*.c")
                .compiler("cc")
                .flags(["-O2"]),
        )
        .write();
}
