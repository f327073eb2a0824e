//! A kernel that cannot be loaded panics at the caller's line, not inside
//! the runtime: the generated function, a family's `call` and the slot
//! they go through are `#[track_caller]`. Its own test binary, because it
//! sets a panic hook.

use std::panic::{self, Location};
use std::sync::{Arc, Mutex};

use ck_jit_macros::lazy_kernel;

static BROKEN: ck_jit_rt::__private::Embedded = ck_jit_rt::__private::Embedded::from_json_str(
    r#"{"format":1,"name":"ck_jit_macros_location","root":"/nonexistent/ck-jit-location",
"groups":[{"name":"g","compiler":"cc","args":["{src}","-o","{out}"],"symbol":{"exact":"{name}"}}],
"blobs":[{"name":"gone","source":"gone.c","group":0}]}"#,
);

#[lazy_kernel(manifest = BROKEN)]
extern "C" {
    fn gone(x: i32) -> i32;
}

#[lazy_kernel(family = "g", manifest = BROKEN)]
unsafe extern "C" fn g(x: i32) -> i32;

/// Runs `f`, which must panic, and returns where the panic says it was.
fn panic_site(f: impl FnOnce()) -> (String, u32, String) {
    let seen: Arc<Mutex<Option<(String, u32, String)>>> = Arc::default();
    let sink = seen.clone();
    let previous = panic::take_hook();
    panic::set_hook(Box::new(move |info| {
        let loc = info.location().expect("a location");
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_default();
        *sink.lock().unwrap() = Some((loc.file().to_string(), loc.line(), msg));
    }));
    let result = panic::catch_unwind(panic::AssertUnwindSafe(f));
    panic::set_hook(previous);
    assert!(result.is_err(), "no panic");
    let site = seen.lock().unwrap().take();
    site.expect("the hook saw the panic")
}

#[test]
fn a_failed_load_panics_at_the_callers_line() {
    let here = Location::caller().file().to_string();
    let line = line!() + 2;
    let (file, at, msg) = panic_site(|| {
        let _ = unsafe { gone(1) };
    });
    assert_eq!((file.as_str(), at), (here.as_str(), line), "{msg}");
    assert!(msg.contains("gone"), "{msg}");

    let kernel = g::by_name("gone").unwrap();
    let line = line!() + 2;
    let (file, at, msg) = panic_site(move || {
        let _ = unsafe { g::call(kernel, 1) };
    });
    assert_eq!((file.as_str(), at), (here.as_str(), line), "{msg}");
}
