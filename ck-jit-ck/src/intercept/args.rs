//! Reading a compiler command line the way a hipcc/clang driver does, well
//! enough to tell which argument is the source, which the output and which
//! belong to a dependency file: what the shim needs to decide, and what
//! turning a recorded compile into a manifest template needs to replace.

/// Options whose value is the next argument.
const TAKES_VALUE: &[&str] = &[
    "-o",
    "-I",
    "-isystem",
    "-iquote",
    "-idirafter",
    "-include",
    "-imacros",
    "-isysroot",
    "--sysroot",
    "-MF",
    "-MT",
    "-MQ",
    "-x",
    "-Xclang",
    "-Xlinker",
    "-Xassembler",
    "-Xpreprocessor",
    "-Xarch_host",
    "-Xarch_device",
    "-Xoffload-linker",
    "-Xcuda-ptxas",
    "-Xcuda-fatbinary",
    "-L",
    "-D",
    "-U",
    "-mllvm",
    "-target",
    "-arch",
    "-z",
    "-T",
    "-u",
    "-e",
    "-l",
];

/// Options that stop a command from producing an object (so it is never a
/// blob compile).
const NO_OBJECT: &[&str] = &[
    "-E",
    "-M",
    "-MM",
    "-fsyntax-only",
    "-S",
    "--version",
    "-v",
    "-###",
];

/// What a compiler command line does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Analysed {
    /// Source files: index into the arguments, and the text.
    pub sources: Vec<(usize, String)>,
    /// `-o` value: index of the argument holding it, and the path.
    pub output: Option<(usize, String)>,
    /// `-c`: compile only.
    pub compile_only: bool,
    /// `-shared`.
    pub shared: bool,
    /// `-MD`/`-MMD`: write a dependency file.
    pub deps: bool,
    /// `-MF` value.
    pub depfile: Option<String>,
    /// `-MT`/`-MQ` value.
    pub dep_target: Option<String>,
    /// An option that produces no object (`-E`, `-fsyntax-only`, ...), or a
    /// response file the shim cannot see into.
    pub no_object: bool,
}

/// Whether `arg` names a source file by its extension.
pub(crate) fn is_source(arg: &str) -> bool {
    !arg.starts_with('-')
        && arg
            .rsplit_once('.')
            .is_some_and(|(_, ext)| super::super::symbol::SOURCE_EXTENSIONS.contains(&ext))
}

/// Reads `args` (without the program name).
pub(crate) fn analyse(args: &[String]) -> Analysed {
    let mut a = Analysed::default();
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_str();
        let next = args.get(i + 1).cloned();
        if TAKES_VALUE.contains(&arg) {
            match arg {
                "-o" => a.output = next.map(|n| (i + 1, n)),
                "-MF" => a.depfile = next,
                "-MT" | "-MQ" => a.dep_target = next,
                _ => {}
            }
            i += 2;
            continue;
        }
        if let Some(v) = arg.strip_prefix("-o").filter(|v| !v.is_empty()) {
            a.output = Some((i, v.to_string()));
        } else if let Some(v) = arg.strip_prefix("-MF").filter(|v| !v.is_empty()) {
            a.depfile = Some(v.to_string());
        } else if let Some(v) = arg
            .strip_prefix("-MT")
            .or_else(|| arg.strip_prefix("-MQ"))
            .filter(|v| !v.is_empty())
        {
            a.dep_target = Some(v.to_string());
        } else {
            match arg {
                "-c" => a.compile_only = true,
                "-shared" => a.shared = true,
                "-MD" | "-MMD" => a.deps = true,
                _ if NO_OBJECT.contains(&arg) || arg.starts_with('@') => a.no_object = true,
                _ if is_source(arg) => a.sources.push((i, arg.to_string())),
                _ => {}
            }
        }
        i += 1;
    }
    a
}

/// The indices of the arguments that are inputs (neither options nor the
/// values of options), as a link command takes its objects.
pub(crate) fn inputs(args: &[String]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_str();
        if TAKES_VALUE.contains(&arg) {
            i += 2;
            continue;
        }
        if !arg.starts_with('-') && !arg.is_empty() {
            out.push(i);
        }
        i += 1;
    }
    out
}

/// The arguments as a manifest template: the source becomes `{src}`, the
/// output `{out}` (a shared object: `-c` dropped, `-fPIC -shared` added),
/// dependency-file options dropped (the runtime adds its own).
pub(crate) fn template(args: &[String], source_at: usize) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len() + 4);
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_str();
        if i == source_at {
            out.push("{src}".to_string());
            i += 1;
            continue;
        }
        match arg {
            "-o" | "-MF" | "-MT" | "-MQ" => {
                i += 2;
                continue;
            }
            "-c" | "-MD" | "-MMD" | "-MP" | "-shared" | "-fPIC" => {
                i += 1;
                continue;
            }
            _ => {}
        }
        if TAKES_VALUE.contains(&arg) {
            out.push(arg.to_string());
            if let Some(v) = args.get(i + 1) {
                out.push(v.clone());
            }
            i += 2;
            continue;
        }
        let joined_drop = ["-o", "-MF", "-MT", "-MQ"]
            .iter()
            .any(|p| arg.len() > p.len() && arg.starts_with(p));
        if !joined_drop && !arg.starts_with("-Wp,-M") {
            out.push(arg.to_string());
        }
        i += 1;
    }
    out.extend(["-fPIC", "-shared", "-o", "{out}"].map(String::from));
    out
}

/// Arguments a host C++ compiler does not take, dropped when the real
/// hipcc is missing and host sources go to `c++` instead.
pub(crate) fn strip_hip_flags(args: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_str();
        let value = |p: &str| arg.starts_with(p);
        if arg == "-x"
            && args
                .get(i + 1)
                .is_some_and(|l| l == "hip" || l == "cu" || l == "cuda")
        {
            i += 2;
            continue;
        }
        if matches!(
            arg,
            "-mllvm" | "-Xarch_device" | "-Xoffload-linker" | "-Xcuda-ptxas" | "-Xcuda-fatbinary"
        ) {
            i += 2;
            continue;
        }
        let drop = value("--offload-arch")
            || value("--amdgpu-target")
            || value("--cuda-gpu-arch")
            || value("--rocm-path")
            || value("--rocm-device-lib-path")
            || value("--hip-path")
            || value("--hip-device-lib")
            || value("--hip-version")
            || value("-fgpu-")
            || value("-fno-gpu-")
            || value("-fhip-")
            || value("-fno-hip-")
            || value("-fcuda-")
            || value("--offload-")
            || value("-munsafe-fp-atomics")
            || value("-mno-unsafe-fp-atomics")
            || arg == "--hip-link"
            || arg == "-xhip";
        if !drop {
            out.push(arg.to_string());
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn sources_outputs_and_dep_files_are_found() {
        let args = v(&[
            "-I",
            "inc.cpp",
            "-x",
            "hip",
            "-c",
            "k/fmha_fwd_d64.cpp",
            "-o",
            "obj/x.o",
            "-MD",
            "-MF",
            "obj/x.d",
            "-MTobj/x.o",
            "--offload-arch=gfx90a",
        ]);
        let a = analyse(&args);
        assert_eq!(a.sources, [(5, "k/fmha_fwd_d64.cpp".to_string())]);
        assert_eq!(a.output, Some((7, "obj/x.o".to_string())));
        assert!(a.compile_only && a.deps && !a.shared && !a.no_object);
        assert_eq!(a.depfile.as_deref(), Some("obj/x.d"));
        assert_eq!(a.dep_target.as_deref(), Some("obj/x.o"));
        assert!(analyse(&v(&["-E", "a.cpp"])).no_object);
        assert!(analyse(&v(&["@rsp"])).no_object);
        assert_eq!(
            analyse(&v(&["-oa.o", "b.cu"])).output,
            Some((0, "a.o".into()))
        );
    }

    #[test]
    fn templates_replace_source_and_output_and_drop_dep_flags() {
        let args = v(&[
            "-O3",
            "-c",
            "-x",
            "hip",
            "src/a.cpp",
            "-o",
            "a.o",
            "-MD",
            "-MF",
            "a.d",
            "-MTa.o",
            "-fPIC",
            "-I",
            "src/a.cpp",
        ]);
        assert_eq!(
            template(&args, 4),
            v(&[
                "-O3",
                "-x",
                "hip",
                "{src}",
                "-I",
                "src/a.cpp",
                "-fPIC",
                "-shared",
                "-o",
                "{out}"
            ])
        );
    }

    #[test]
    fn hip_flags_are_stripped_for_a_host_compiler() {
        let args = v(&[
            "-O2",
            "--offload-arch=gfx90a",
            "-x",
            "hip",
            "-mllvm",
            "-x",
            "-fgpu-rdc",
            "-c",
            "a.cpp",
        ]);
        assert_eq!(strip_hip_flags(&args), v(&["-O2", "-c", "a.cpp"]));
    }
}
