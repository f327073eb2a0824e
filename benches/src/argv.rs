//! The compile command the runtime runs for a blob, built the way the
//! runtime builds it (placeholders expanded, `-fvisibility=hidden`
//! dropped, `-MD -MF` added when the group takes a depfile), so that a
//! baseline running the compiler directly runs the identical command.

use std::path::Path;

use ck_jit_build::Manifest;
use ck_jit_rt::__internals as compile;

/// The argv (program first) compiling `blob` of `m`, with the tree at
/// `root`, writing `out` and the depfile `dep`.
pub fn compile_argv(
    m: &Manifest,
    blob: &str,
    root: &Path,
    out: &Path,
    dep: &Path,
) -> Result<Vec<String>, String> {
    let b = m.blob(blob).ok_or_else(|| format!("no blob {blob}"))?;
    let g = m.group_of(b);
    let program = compile::find_program(&g.compiler)
        .ok_or_else(|| format!("compiler {} not found", g.compiler))?;
    let src = root.join(&b.source);
    let mut argv = vec![program.to_string_lossy().into_owned()];
    argv.extend(
        g.args
            .iter()
            .filter(|a| a.as_str() != "-fvisibility=hidden")
            .map(|a| compile::expand(a, root, &src, out, blob)),
    );
    if g.depfile {
        argv.push("-MD".into());
        argv.push("-MF".into());
        argv.push(dep.to_string_lossy().into_owned());
    }
    Ok(argv)
}
