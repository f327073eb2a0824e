//! Records how to compile every kernel under `kernels/` and compiles none
//! of them: that happens on each kernel's first call.

use ck_jit_build::{BlobGroup, Build};

fn main() {
    Build::new()
        .name("ck_jit_quickstart")
        .group(
            BlobGroup::new("vec")
                .glob("kernels/*.cpp")
                .compiler("c++")
                .flags(["-O2", "-std=c++17"])
                .include("kernels/include")
                // vadd_f32.cpp -> {op: vadd, dtype: f32}
                .meta_pattern(r"^(?P<op>[a-z]+)_(?P<dtype>f32|f64|i32)$")
                .require_meta_match(true),
        )
        .write();
}
