use ck_jit_macros::lazy_kernel;

static __CK_JIT_MANIFEST: ck_jit_rt::__private::Embedded =
    ck_jit_rt::__private::Embedded::from_json_str(include_str!("../fixtures/manifest.json"));

// A refused signature is one error: uses of the kernel and its module
// still resolve.
#[lazy_kernel]
extern "C" {
    pub fn vadd_f32(n: usize, ...);
}

pub fn uses() -> Result<(), ck_jit_rt::Error> {
    vadd_f32::prepare()?;
    let _ = vadd_f32::try_get()?;
    assert_eq!(vadd_f32::BLOB, "vadd_f32");
    unsafe { vadd_f32(4) };
    Ok(())
}

fn main() {}
