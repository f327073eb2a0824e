//! Lazy libraries: the link step of a foreign build, made lazy. When a
//! link (a shared library or a program) takes objects that were blob
//! compiles, the shim links instead:
//!
//! - everything the build links but those blob objects (the stub objects
//!   the shim answered them with), so the build's own host code — CK's
//!   dispatchers, aiter's API — is linked as it was compiled;
//! - generated *stubs* ([`stub_source`](super::super::lazy::stub_source)):
//!   a definition of every explicit specialisation those blobs define,
//!   which resolves its blob through the ck-jit C ABI on first call and
//!   forwards to it, compiled by the real HIP compiler with the first
//!   blob's own flags and `-DCK_JIT_STUB_MANIFEST="<manifest>"`, so the
//!   library finds its blobs in the manifest the interception writes;
//! - the ck-jit C ABI library ([`Intercept::lazy_libraries`](super::Intercept::lazy_libraries)),
//!   its symbols kept inside the library when it is static.
//!
//! Each lazy link appends a [`Link`] line to the interception's link log.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::args::{analyse, inputs, template};
use super::protocol::{
    append_line, dispatcher_log, file_stamp, sources_log, ReadSource, Invocation, REAL_HIPCC, SHIM_LAZY_MANIFEST, SHIM_LINKS, SHIM_LOG,
    SHIM_PREVIOUS, SHIM_RUNTIME_LIB,
};
use super::super::decl::Specialisation;
use super::real::{real_command, restored};
use ck_jit_build::CargoOutput;

/// One link made lazy: a line of the link log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    /// The library or program written (absolute).
    pub output: String,
    /// The blobs whose objects were left out, sorted.
    pub blobs: Vec<String>,
    /// How many specialisations the stubs define.
    pub specialisations: usize,
    /// The stub source compiled into it.
    pub stubs: String,
}

fn var(name: &str) -> Option<String> {
    CargoOutput::silent()
        .var(name)
        .and_then(|v| v.into_string().ok())
        .filter(|v| !v.is_empty())
}

/// Splits a response file's text into arguments: whitespace separates,
/// single and double quotes group, a backslash escapes the next character.
pub(crate) fn split_response(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut has = false;
    let mut quote: Option<char> = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') | (None, '\\') => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
                has = true;
            }
            (Some(_), c) => cur.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                has = true;
            }
            (None, c) if c.is_whitespace() => {
                if has || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                has = false;
            }
            (None, c) => cur.push(c),
        }
    }
    if has || !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// One argument as a response file holds it.
fn quote_response(arg: &str) -> String {
    if !arg.is_empty()
        && arg
            .chars()
            .all(|c| !c.is_whitespace() && !matches!(c, '"' | '\'' | '\\'))
    {
        return arg.to_string();
    }
    let mut s = String::from("\"");
    for c in arg.chars() {
        if matches!(c, '"' | '\\') {
            s.push('\\');
        }
        s.push(c);
    }
    s.push('"');
    s
}

/// The sets of blobs the dispatchers this link takes call together
/// (CK's bwd kernels, splitkv pairs), appended to `<links log>.together`
/// as one JSON line, for the manifest ([`Manifest::together`]): the
/// dispatchers are the linked objects the shim saw compiled from excluded
/// sources (`*_api.cpp`), read and checked against the linked blobs'
/// specialisations.
///
/// Returns the order of the dispatchers' calls, for the stubs
/// ([`CallOrder`]).
///
/// [`Manifest::together`]: ck_jit_build::manifest::Manifest
/// [`CallOrder`]: super::super::CallOrder
fn note_together(
    flat: &[String],
    cwd: &Path,
    blobs: &[LinkedBlob],
    links_log: &str,
) -> Result<super::super::CallOrder, String> {
    let Some(log) = var(SHIM_LOG) else {
        return Ok(Default::default());
    };
    let Ok(text) = fs::read_to_string(dispatcher_log(&log)) else {
        return Ok(Default::default());
    };
    let mut source_of: HashMap<PathBuf, PathBuf> = HashMap::new();
    for line in text.lines() {
        if let Ok((src, obj)) = serde_json::from_str::<(String, String)>(line) {
            let obj = PathBuf::from(obj);
            let obj = fs::canonicalize(&obj).unwrap_or(obj);
            source_of.insert(obj, PathBuf::from(src));
        }
    }
    let mut dispatchers = Vec::new();
    for i in inputs(flat) {
        let p = cwd.join(&flat[i]);
        let p = fs::canonicalize(&p).unwrap_or(p);
        if let Some(src) = source_of.get(&p) {
            let text = fs::read_to_string(src).map_err(|e| format!("'{}': {e}", src.display()))?;
            dispatchers.push((src.clone(), text));
        }
    }
    if dispatchers.is_empty() {
        return Ok(Default::default());
    }
    let mut owner: HashMap<String, &str> = HashMap::new();
    let mut returns: HashMap<String, String> = HashMap::new();
    for b in blobs {
        let name = &b.name;
        for s in &b.specialisations {
            returns
                .entry(s.template.clone())
                .or_insert(s.returns.clone());
            owner.insert(
                super::super::calls::specialisation_key(&s.template, &s.args),
                name.as_str(),
            );
        }
    }
    let defined = owner.keys().cloned().collect();
    let check =
        super::super::calls::check_calls(&dispatchers, &defined).map_err(|e| e.to_string())?;
    let sets: Vec<Vec<&str>> = check
        .groups
        .iter()
        .map(|g| {
            let mut names: Vec<&str> = g.iter().filter_map(|k| owner.get(k).copied()).collect();
            names.sort_unstable();
            names.dedup();
            names
        })
        .filter(|g| !g.is_empty())
        .collect();
    append_line(Path::new(&format!("{links_log}.together")), &sets)?;
    Ok(super::super::CallOrder::new(&check.sequences, |t| {
        returns.get(t).is_some_and(|r| r == "void")
    }))
}

/// The blob invocations of the interception so far (this build's log, then
/// an earlier interception's), by the absolute path of the object each
/// was answered with.
fn blob_objects() -> Result<HashMap<PathBuf, Invocation>, String> {
    let mut map = HashMap::new();
    for name in [SHIM_PREVIOUS, SHIM_LOG] {
        let Some(path) = var(name) else { continue };
        let text = match fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(format!("cannot read '{path}': {e}")),
        };
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let r: Invocation =
                serde_json::from_str(line).map_err(|e| format!("'{path}': bad record: {e}"))?;
            if let Some(out) = &r.output {
                let abs = Path::new(&r.cwd).join(out);
                let abs = fs::canonicalize(&abs).unwrap_or(abs);
                map.insert(abs, r);
            }
        }
    }
    Ok(map)
}

/// Links `argv` lazily when it links blob objects, returning the link's
/// exit code; `None` when it links none (the caller runs it unchanged).
///
/// The steps: read the link's arguments (response files too), find the
/// blob objects among its inputs, write and compile the stubs of those
/// blobs, link with the stubs and the runtime in place of the blobs, and
/// check what the linked output leaves undefined.
pub(crate) fn lazy_link(argv: &[String]) -> Result<Option<i32>, String> {
    let cwd = std::env::current_dir().map_err(|e| format!("working directory: {e}"))?;
    let args = argv.get(1..).unwrap_or(&[]);
    let expanded = expand_response_files(args, &cwd)?;
    let flat: Vec<String> = expanded.iter().map(|(a, _)| a.clone()).collect();
    let a = analyse(&flat);
    if a.compile_only || a.no_object || a.output.is_none() {
        return Ok(None);
    }
    let objects = blob_objects()?;
    let mut linked: Vec<(usize, &Invocation)> = Vec::new();
    for i in inputs(&flat) {
        let p = cwd.join(&flat[i]);
        let p = fs::canonicalize(&p).unwrap_or(p);
        if let Some(r) = objects.get(&p) {
            linked.push((i, r));
        }
    }
    if linked.is_empty() {
        return Ok(None);
    }
    let output = a
        .output
        .as_ref()
        .map(|(_, o)| o.clone())
        .unwrap_or_default();
    let output_abs = cwd.join(&output);
    let out_name = output_abs
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "a.out".into());

    let manifest = var(SHIM_LAZY_MANIFEST).ok_or("no manifest path for the lazy link")?;
    let links_log = var(SHIM_LINKS).ok_or("no link log for the lazy link")?;
    let runtime = var(SHIM_RUNTIME_LIB).ok_or("no ck-jit runtime library for the lazy link")?;
    let lazy_dir = Path::new(&links_log)
        .parent()
        .map(|p| p.join("lazy"))
        .unwrap_or_else(|| PathBuf::from("lazy"));
    fs::create_dir_all(&lazy_dir)
        .map_err(|e| format!("cannot create '{}': {e}", lazy_dir.display()))?;

    let blobs = blob_sources(&linked, &output, Path::new(&links_log))?;
    let order = note_together(&flat, &cwd, &blobs, &links_log)?;
    let parts: Vec<super::super::lazy::StubPart<'_>> = blobs
        .iter()
        .map(|b| (b.name.as_str(), b.includes.as_slice(), b.specialisations.as_slice()))
        .collect();
    let (stubs_text, specialisations) = super::super::lazy::stubs_of(&parts, &order);
    let stubs = lazy_dir.join(format!("{out_name}.stubs.cpp"));
    let stubs_obj = lazy_dir.join(format!("{out_name}.stubs.o"));
    ck_jit_build::assemble::write_if_changed(&stubs, &stubs_text)
        .map_err(|e| format!("cannot write '{}': {e}", stubs.display()))?;
    compile_stubs(linked[0].1, &stubs, &stubs_obj, &manifest)?;

    let drop: HashSet<usize> = linked.iter().map(|(i, _)| *i).collect();
    let mut largv = vec![argv[0].clone()];
    largv.extend(link_args(&expanded, &drop, &lazy_dir, &out_name)?);
    largv.push(stubs_obj.display().to_string());
    largv.extend(runtime_args(&runtime));
    let (program, largs) = real_command(&largv);

    let mut names: Vec<String> = blobs.iter().map(|b| b.name.clone()).collect();
    names.sort();
    let record = Link {
        output: output_abs.display().to_string(),
        blobs: names,
        specialisations,
        stubs: stubs.display().to_string(),
    };
    append_line(Path::new(&links_log), &record)?;
    let status = restored(&program)
        .args(&largs)
        .status()
        .map_err(|e| format!("cannot run the linker {program:?}: {e}"))?;
    if status.success() {
        check_linked(&output_abs, &blobs)?;
    }
    Ok(Some(status.code().unwrap_or(1)))
}

/// The arguments with response files read: (argument, index of the
/// response file argument it came from, if any).
fn expand_response_files(
    args: &[String],
    cwd: &Path,
) -> Result<Vec<(String, Option<usize>)>, String> {
    let mut expanded = Vec::new();
    for (i, a) in args.iter().enumerate() {
        match a.strip_prefix('@') {
            Some(file) => {
                let text = fs::read_to_string(cwd.join(file))
                    .map_err(|e| format!("cannot read response file '{file}': {e}"))?;
                expanded.extend(split_response(&text).into_iter().map(|t| (t, Some(i))));
            }
            None => expanded.push((a.clone(), None)),
        }
    }
    Ok(expanded)
}

/// A linked blob as the lazy link needs it, its source read and lexed
/// once for the dispatchers' check, the stubs and the check of the
/// output: its name, `#include` lines and specialisations.
struct LinkedBlob {
    name: String,
    includes: Vec<String>,
    specialisations: Vec<Specialisation>,
}

/// Each linked blob, read once. A blob that defines no explicit
/// specialisation cannot be stood in for: an error.
/// What is read is recorded beside `links_log` for the manifest step
/// ([`ReadSource`]).
fn blob_sources(
    linked: &[(usize, &Invocation)],
    output: &str,
    links_log: &Path,
) -> Result<Vec<LinkedBlob>, String> {
    let mut blobs = Vec::with_capacity(linked.len());
    let mut plain = Vec::new();
    let sources = sources_log(links_log);
    for (_, r) in linked {
        let src = Path::new(&r.cwd).join(&r.source);
        let src = fs::canonicalize(&src).unwrap_or(src);
        // The stamp is taken before the read: a file written meanwhile
        // has a newer one, and the manifest step reads it again.
        let stamp = file_stamp(&src);
        let text =
            fs::read_to_string(&src).map_err(|e| format!("blob '{}': {e}", src.display()))?;
        let name = src
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let source = super::super::decl::blob_source(&text)
            .map_err(|e| format!("blob '{}': {e}", src.display()))?;
        if source.specialisations.is_empty() {
            plain.push(name.clone());
        }
        blobs.push(LinkedBlob {
            includes: super::super::lazy::include_lines(&text),
            name,
            specialisations: source.specialisations.clone(),
        });
        if let Some((len, mtime_ns)) = stamp {
            let read = ReadSource {
                path: src,
                len,
                mtime_ns,
                source,
            };
            append_line(&sources, &read)?;
        }
    }
    if !plain.is_empty() {
        return Err(format!(
            "cannot link '{output}' lazily: blob(s) {} define no explicit template \
             specialisation to stand in for (lazy libraries need CK-style blobs); intercept \
             without lazy_libraries() to record only",
            plain.join(", ")
        ));
    }
    Ok(blobs)
}

/// Compiles the stubs with the first linked blob's own command: its
/// includes and defines are what the specialisations' declarations need.
fn compile_stubs(first: &Invocation, stubs: &Path, obj: &Path, manifest: &str) -> Result<(), String> {
    let real = var(REAL_HIPCC).ok_or(
        "linking lazily needs a real HIP compiler for the stubs; set CK_JIT_REAL_HIPCC or \
         Intercept::real_compiler()",
    )?;
    let mut cargv = vec![real];
    cargv.extend(stub_compile_args(
        first.argv.get(1..).unwrap_or(&[]),
        stubs,
        obj,
        manifest,
    ));
    let (program, cargs) = real_command(&cargv);
    let out = restored(&program)
        .args(&cargs)
        .current_dir(&first.cwd)
        .output()
        .map_err(|e| format!("cannot run the real HIP compiler {program:?}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    Err(format!(
        "compiling the lazy stubs '{}' failed ({}): {}",
        stubs.display(),
        out.status,
        super::super::error::tail(&text, 3000)
    ))
}

/// The link's arguments without the blob objects at `drop`: a response
/// file that held some is written again without them, beside the stubs.
fn link_args(
    expanded: &[(String, Option<usize>)],
    drop: &HashSet<usize>,
    lazy_dir: &Path,
    out_name: &str,
) -> Result<Vec<String>, String> {
    let mut new_args: Vec<String> = Vec::with_capacity(expanded.len() + 8);
    let mut done_rsp: HashSet<usize> = HashSet::new();
    for (k, (arg, from)) in expanded.iter().enumerate() {
        match from {
            None if drop.contains(&k) => {}
            None => new_args.push(arg.clone()),
            Some(i) => {
                if !done_rsp.insert(*i) {
                    continue;
                }
                let kept: Vec<String> = expanded
                    .iter()
                    .enumerate()
                    .filter(|(j, (_, f))| *f == Some(*i) && !drop.contains(j))
                    .map(|(_, (a, _))| quote_response(a))
                    .collect();
                let rsp = lazy_dir.join(format!("{out_name}.{i}.rsp"));
                fs::write(&rsp, kept.join("\n"))
                    .map_err(|e| format!("cannot write '{}': {e}", rsp.display()))?;
                new_args.push(format!("@{}", rsp.display()));
            }
        }
    }
    Ok(new_args)
}

/// The runtime library and what it needs, its symbols kept out of the
/// library's exports when it is an archive.
fn runtime_args(runtime: &str) -> Vec<String> {
    let mut args = Vec::new();
    if runtime.ends_with(".a") {
        let base = Path::new(runtime)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        args.push(format!("-Wl,--exclude-libs,{base}"));
    }
    args.push(runtime.to_string());
    args.extend(
        ["-lpthread", "-ldl", "-lm", "-lrt", "-lutil", "-lgcc_s"]
            .iter()
            .map(|s| s.to_string()),
    );
    args
}

/// What the linked output leaves undefined, checked where it cannot be
/// fooled: a specialisation of a template the linked blobs specialise that
/// the output needs and does not define (a call the stubs do not answer,
/// made from the dispatcher or from a template of a header it includes)
/// fails the link, and the output is removed so the build cannot install
/// it. HIP runtime and C++ library symbols stay undefined, as in any
/// ROCm link: they are resolved when the library loads.
fn check_linked(output: &Path, blobs: &[LinkedBlob]) -> Result<(), String> {
    let mut templates = std::collections::BTreeSet::new();
    for b in blobs {
        templates.extend(b.specialisations.iter().map(|s| s.template.clone()));
    }
    let missing = crate::objects::missing_specialisations(&[output.to_path_buf()], &templates)
        .map_err(|e| e.to_string())?;
    if missing.is_empty() {
        return Ok(());
    }
    let _ = fs::remove_file(output);
    Err(crate::error::Error::UndefinedSpecialisations {
        output: output.to_path_buf(),
        missing,
    }
    .to_string())
}

/// The arguments of a blob compile turned into the stubs' compile: the
/// source and output replaced, dependency files dropped, the manifest
/// path defined.
fn stub_compile_args(args: &[String], stubs: &Path, obj: &Path, manifest: &str) -> Vec<String> {
    let a = analyse(args);
    let source_at = a.sources.first().map_or(usize::MAX, |(i, _)| *i);
    // The manifest template of the command, without its source and its
    // `-fPIC -shared -o {out}` tail.
    let mut out: Vec<String> = template(args, source_at)
        .into_iter()
        .filter(|a| a != "{src}")
        .collect();
    out.truncate(out.len().saturating_sub(4));
    let literal = manifest.replace('\\', "\\\\").replace('"', "\\\"");
    out.push("-fPIC".into());
    out.push(format!("-DCK_JIT_STUB_MANIFEST=\"{literal}\""));
    out.push("-c".into());
    out.push(stubs.display().to_string());
    out.push("-o".into());
    out.push(obj.display().to_string());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_linked_blob_is_read_once_and_recorded_for_the_manifest_step() {
        let dir = std::env::temp_dir().join(format!("ck-jit-link-read-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let blob = dir.join("b.cpp");
        fs::write(
            &blob,
            "#include \"x.hpp\"\n#if !defined(__HIP_DEVICE_COMPILE__) || (true)\n\
             template <> float fmha_fwd_<int>(int a) { return 0; }\n#endif\n",
        )
        .unwrap();
        let r = Invocation {
            argv: vec!["hipcc".into()],
            cwd: dir.display().to_string(),
            source: "b.cpp".into(),
            output: None,
        };
        let links_log = dir.join("links.jsonl");
        let blobs = blob_sources(&[(0, &r)], "lib.so", &links_log).unwrap();
        assert_eq!(blobs[0].name, "b");
        assert_eq!(blobs[0].includes, ["#include \"x.hpp\""]);
        assert_eq!(blobs[0].specialisations[0].template, "fmha_fwd_");
        let text = fs::read_to_string(sources_log(&links_log)).unwrap();
        let read: ReadSource = serde_json::from_str(text.trim()).unwrap();
        assert_eq!(read.path, fs::canonicalize(&blob).unwrap());
        assert_eq!(file_stamp(&blob), Some((read.len, read.mtime_ns)));
        assert_eq!(read.source, crate::decl::blob_source(&fs::read_to_string(&blob).unwrap()).unwrap());
        // A malformed blob is the compiler's error, named, not "no
        // specialisation".
        fs::write(&blob, "#ifdef __clang__\ntemplate <> float f<int>(int a);\n").unwrap();
        let e = blob_sources(&[(0, &r)], "lib.so", &links_log).err().unwrap();
        assert!(e.contains("unterminated #ifdef"), "{e}");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn response_files_split_and_quote_back() {
        let t = "a.o  \"b c.o\"\n'd.o' e\\ f.o\n";
        let v = split_response(t);
        assert_eq!(v, ["a.o", "b c.o", "d.o", "e f.o"]);
        let back: Vec<String> = v.iter().map(|a| quote_response(a)).collect();
        assert_eq!(split_response(&back.join(" ")), v);
    }

    #[test]
    fn the_stub_compile_keeps_flags_and_replaces_source_and_output() {
        let args: Vec<String> = [
            "-DX=1",
            "-Iinc",
            "-c",
            "blob.cpp",
            "-o",
            "blob.o",
            "-MD",
            "-MF",
            "blob.d",
            "--offload-arch=gfx942",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let out = stub_compile_args(
            &args,
            Path::new("/l/s.cpp"),
            Path::new("/l/s.o"),
            "/m \"x\".json",
        );
        assert_eq!(
            out,
            [
                "-DX=1",
                "-Iinc",
                "--offload-arch=gfx942",
                "-fPIC",
                "-DCK_JIT_STUB_MANIFEST=\"/m \\\"x\\\".json\"",
                "-c",
                "/l/s.cpp",
                "-o",
                "/l/s.o"
            ]
        );
    }
}
