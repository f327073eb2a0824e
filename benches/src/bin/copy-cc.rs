//! A mocked compiler that compiles nothing: invoked with a real compiler's
//! argv, it copies a prebuilt shared object to the `-o` path and, when
//! `-MF FILE` is given, writes an empty depfile there. The miss-overhead
//! bench uses it so that what it measures around the compiler is not
//! hidden by the compile.
//!
//! The object to copy is `--copy-from=PATH` (an argument, so it is part of
//! the recorded command) or else `$COPY_CC_OBJECT`. `--sleep-ms=N` makes it
//! take N ms first, like a short real compile. `--version` prints one line,
//! as compilers do.

use std::process::exit;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--version") {
        println!("copy-cc 1.0 (ck-jit benchmark stand-in compiler)");
        return;
    }
    let mut from = std::env::var("COPY_CC_OBJECT").ok();
    let mut out = None;
    let mut depfile = None;
    let mut sleep_ms = 0;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if let Some(p) = a.strip_prefix("--copy-from=") {
            from = Some(p.to_string());
        } else if let Some(ms) = a.strip_prefix("--sleep-ms=") {
            sleep_ms = ms.parse().unwrap_or(0);
        } else if a == "-o" {
            out = it.next().cloned();
        } else if a == "-MF" {
            depfile = it.next().cloned();
        }
    }
    let (Some(from), Some(out)) = (from, out) else {
        eprintln!("copy-cc: need -o OUT and --copy-from=PATH (or COPY_CC_OBJECT)");
        exit(2);
    };
    std::thread::sleep(std::time::Duration::from_millis(sleep_ms));
    if let Err(e) = std::fs::copy(&from, &out) {
        eprintln!("copy-cc: copying {from} to {out}: {e}");
        exit(1);
    }
    if let Some(d) = depfile {
        if let Err(e) = std::fs::write(&d, b"") {
            eprintln!("copy-cc: writing the depfile {d}: {e}");
            exit(1);
        }
    }
}
