//! A stand-in compiler, invoked exactly like the real one (same argv), that
//! produces a real loadable object by handing the source to the system C/C++
//! compiler with the GPU-only flags removed (hipcc/clang and nvcc target
//! flags among them), and that can misbehave on
//! request so failure paths are testable.
//!
//! Settings come from the environment, or from `--mock-log=`,
//! `--mock-mode=` and `--mock-only=` arguments (removed before the real
//! compiler runs), which lets tests that share a process differ:
//! - `MOCK_CC_LOG`: append one line per invocation (the argv, `\x1f`-joined).
//! - `MOCK_CC_MODE`: comma-separated: `fail`, `hang`, `truncate`, `empty`,
//!   `nonelf`, `otherarch`, `spew=<MiB>`, `sleep=<ms>`, `touch-src`,
//!   `spawn-hang=<pidfile>` (start a child that hangs, write its pid to
//!   the file, then hang too: a driver whose subprocess outlives it),
//!   `running=<file>` (append a `+` line to the file when the mode is
//!   reached and a `-` line once the real compiler has exited, with
//!   `O_APPEND`: the highest running sum over the file's lines is the most
//!   compiles that ran at once), `hold=<MiB>` (allocate and touch that
//!   much memory and keep it until the mock exits: a compile of a known
//!   peak resident size), `sigkill` (kill itself with SIGKILL, as the
//!   out-of-memory killer does), `sigkill-first=<file>` (append a line to
//!   the file, and kill itself with SIGKILL when it was the first: killed
//!   once, fine when run again).
//! - `MOCK_CC_ONLY`: apply the modes only when the source path contains this.
//! - `--mock-note=<text>` arguments are logged but not passed on (to see
//!   what reached the compiler's argv without the real compiler judging it).
//! - `MOCK_CC_VERSION`: text appended to `--version` (changes its identity).
//! - `MOCK_CC_REAL`: the real compiler (default `c++`, or `cc` for `.c`).

use std::fs::OpenOptions;
use std::io::Write;
use std::process::{exit, Command};
use std::time::Duration;

/// nvcc flags naming GPU targets, dropped before the system compiler runs.
const NVCC_TARGET_FLAGS: [&str; 6] = [
    "-gencode",
    "--generate-code",
    "-arch",
    "--gpu-architecture",
    "-code",
    "--gpu-code",
];

fn main() {
    let mut log = std::env::var("MOCK_CC_LOG").ok();
    let mut mode = std::env::var("MOCK_CC_MODE").ok();
    let mut only = std::env::var("MOCK_CC_ONLY").ok();
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| {
            if let Some(v) = a.strip_prefix("--mock-log=") {
                log = Some(v.to_string());
            } else if let Some(v) = a.strip_prefix("--mock-mode=") {
                mode = Some(v.to_string());
            } else if let Some(v) = a.strip_prefix("--mock-only=") {
                only = Some(v.to_string());
            } else {
                return true;
            }
            false
        })
        .collect();
    if args.iter().any(|a| a == "--version") {
        println!(
            "mock-cc 1.0 (ck-jit test compiler){}",
            std::env::var("MOCK_CC_VERSION").unwrap_or_default()
        );
        return;
    }
    if let Some(log) = &log {
        if let Ok(mut f) = OpenOptions::new().create(true).append(true).open(log) {
            let mut line = args.join("\x1f");
            line.push('\n');
            let _ = f.write_all(line.as_bytes());
        }
    }
    let out = value_after(&args, "-o");
    let src = args
        .iter()
        .find(|a| {
            [".c", ".cc", ".cpp", ".cxx", ".hip", ".cu"]
                .iter()
                .any(|x| a.ends_with(x))
                && !a.starts_with('-')
        })
        .cloned();
    let modes = match (&only, &src) {
        (Some(only), Some(s)) if !s.contains(only.as_str()) => String::new(),
        _ => mode.unwrap_or_default(),
    };
    let mut truncate = false;
    let mut running: Option<String> = None;
    let mut held: Vec<u8> = Vec::new();
    for m in modes.split(',').filter(|m| !m.is_empty()) {
        let (name, arg) = m.split_once('=').unwrap_or((m, ""));
        match name {
            "fail" => {
                eprintln!("mock-cc: error: this blob is broken on purpose");
                exit(1);
            }
            "hang" => loop {
                std::thread::sleep(Duration::from_secs(3600));
            },
            "spawn-hang" => {
                let me = std::env::current_exe().unwrap_or_else(|_| "mock-cc".into());
                match Command::new(me).arg("--mock-mode=hang").spawn() {
                    Ok(child) => {
                        let _ = std::fs::write(arg, child.id().to_string());
                    }
                    Err(e) => {
                        eprintln!("mock-cc: cannot start the child: {e}");
                        exit(4);
                    }
                }
                loop {
                    std::thread::sleep(Duration::from_secs(3600));
                }
            }
            "sleep" => std::thread::sleep(Duration::from_millis(arg.parse().unwrap_or(100))),
            "empty" => exit(0),
            "nonelf" => {
                write_out(&out, b"this is not an object file\n");
                exit(0);
            }
            "otherarch" => {
                let mut elf = vec![0u8; 64];
                elf[..4].copy_from_slice(b"\x7fELF");
                elf[4] = 2;
                elf[5] = 1;
                elf[6] = 1;
                elf[16] = 3; // ET_DYN
                elf[18] = if cfg!(target_arch = "aarch64") {
                    62
                } else {
                    183
                };
                write_out(&out, &elf);
                exit(0);
            }
            "spew" => {
                let mib: usize = arg.parse().unwrap_or(4);
                let line =
                    "mock-cc: warning: a very long diagnostic line repeated to fill the log\n";
                let mut e = std::io::stderr().lock();
                let mut written = 0;
                while written < mib << 20 {
                    let _ = e.write_all(line.as_bytes());
                    written += line.len();
                }
            }
            "touch-src" => {
                if let Some(s) = &src {
                    if let Ok(mut f) = OpenOptions::new().append(true).open(s) {
                        let _ = writeln!(f, "/* changed while compiling */");
                    }
                }
            }
            "truncate" => truncate = true,
            "hold" => {
                // Every byte written, so every page is resident.
                let mib: usize = arg.parse().unwrap_or(64);
                held = vec![1u8; mib << 20];
            }
            "sigkill" => kill_myself(),
            "sigkill-first" => {
                append_line(arg, "x");
                let runs = std::fs::read_to_string(arg)
                    .map(|t| t.lines().count())
                    .unwrap_or(0);
                if runs == 1 {
                    kill_myself();
                }
            }
            "running" => {
                append_line(arg, "+");
                running = Some(arg.to_string());
            }
            "barrier" => {
                // Wait until N compiles are running at once (proves they
                // overlap); give up after 20 s and fail.
                let (n, secs) = arg.split_once(':').unwrap_or((arg, "20"));
                let n: usize = n.parse().unwrap_or(2);
                let secs: u64 = secs.parse().unwrap_or(20);
                let dir = format!("{}.barrier", log.as_deref().unwrap_or("/tmp/mock-cc"));
                let _ = std::fs::create_dir_all(&dir);
                let mine = format!("{dir}/{}", std::process::id());
                let done = format!("{dir}/done");
                let _ = std::fs::write(&mine, b"");
                let start = std::time::Instant::now();
                loop {
                    let running = std::fs::read_dir(&dir)
                        .map(|d| d.flatten().filter(|e| e.file_name() != "done").count())
                        .unwrap_or(0);
                    if running >= n || std::path::Path::new(&done).exists() {
                        let _ = std::fs::write(&done, b"");
                        break;
                    }
                    if start.elapsed() > Duration::from_secs(secs) {
                        let _ = std::fs::remove_file(&mine);
                        eprintln!("mock-cc: barrier of {n} never filled: compiles did not overlap");
                        exit(3);
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
            other => {
                eprintln!("mock-cc: unknown MOCK_CC_MODE '{other}'");
                exit(2);
            }
        }
    }
    let is_c = src.as_deref().is_some_and(|s| s.ends_with(".c"));
    let real =
        std::env::var("MOCK_CC_REAL").unwrap_or_else(|_| if is_c { "cc" } else { "c++" }.into());
    let mut real_args = Vec::new();
    let mut it = args.iter().peekable();
    while let Some(a) = it.next() {
        if a.starts_with("--offload-arch")
            || a.starts_with("--amdgpu-target")
            || a.starts_with("--cuda-gpu-arch")
            || a == "-fgpu-rdc"
            || a.starts_with("--mock-note=")
        {
            continue;
        }
        // nvcc's target flags, as `-flag value` or `-flag=value`.
        if let Some(flag) = NVCC_TARGET_FLAGS
            .iter()
            .find(|f| a == *f || a.strip_prefix(*f).is_some_and(|r| r.starts_with('=')))
        {
            if a == flag {
                it.next();
            }
            continue;
        }
        if a == "-x" {
            it.next();
            continue;
        }
        if a.ends_with(".hip") || a.ends_with(".cu") {
            real_args.push("-x".to_string());
            real_args.push("c++".to_string());
        }
        real_args.push(a.clone());
    }
    let status = Command::new(&real).args(&real_args).status();
    if let Some(file) = &running {
        append_line(file, "-");
    }
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => exit(s.code().unwrap_or(1)),
        Err(e) => {
            eprintln!("mock-cc: cannot run {real}: {e}");
            exit(127);
        }
    }
    // Held until here, past the real compiler's run.
    std::hint::black_box(&held);
    if truncate {
        if let Some(o) = &out {
            if let Ok(b) = std::fs::read(o) {
                write_out(&out, &b[..b.len() / 2]);
            }
        }
    }
}

fn value_after(args: &[String], flag: &str) -> Option<String> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

fn write_out(out: &Option<String>, bytes: &[u8]) {
    if let Some(o) = out {
        let _ = std::fs::write(o, bytes);
    }
}

/// Appends one line in one `write` (`O_APPEND`: lines of concurrent
/// compilers never interleave, and their order is the order they happened).
fn append_line(path: &str, line: &str) {
    if let Ok(mut f) = OpenOptions::new().create(true).append(true).open(path) {
        let _ = f.write_all(format!("{line}\n").as_bytes());
    }
}

/// Ends this process by SIGKILL, as the kernel's out-of-memory killer does.
fn kill_myself() -> ! {
    // SAFETY: kill(2) of this very process; no memory is involved.
    unsafe {
        libc::kill(libc::getpid(), libc::SIGKILL);
    }
    // SIGKILL cannot be caught; this is never reached.
    exit(9)
}
