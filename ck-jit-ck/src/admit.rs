//! Which requested targets keep each blob: its [`Skeleton`] run with the
//! macros of each target's device pass and of the host pass
//! ([`Macros::for_compile`]), under the `-D`/`-U` flags of the blob's
//! group. A target keeps a blob when both passes keep every one of its
//! specialisations; a pass that keeps some of them and not others, or a
//! condition that cannot be decided, is an error naming the blob, the line
//! and the pass, never a blob dropped on a misreading.
//!
//! It also words what is left out: one `cargo:warning` per kind, with the
//! count, an example and the conditions around its specialisations.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Mutex;

use super::error::Error;
use ck_jit_build::manifest::escape;
use super::guard::Skeleton;
use super::macros::{Macros, Pass};
use super::generated::{GeneratedFile, Role};
use super::vocab::BlobDecl;

/// The targets keeping a skeleton, or the line and reason it cannot be
/// decided.
type Decision = Result<Vec<String>, (usize, String)>;

/// The macro sets a build decides blobs with, and the decisions made, by
/// skeleton (thousands of blobs share a few).
#[derive(Debug)]
pub(crate) struct Admission {
    /// The requested targets, in the order requested.
    pub requested: Vec<String>,
    /// Per flag set (forward or backward kinds): each target's device
    /// pass, then the host pass.
    passes: [Vec<(String, Pass, Macros)>; 2],
    decided: Mutex<HashMap<(String, usize), Decision>>,
}

impl Admission {
    /// The macro sets of `requested` targets in the CK tree `ck`, compiled
    /// as `-std=c++<standard>` with `fwd_flags` for forward kinds and
    /// `bwd_flags` for backward ones.
    pub fn new(
        ck: &Path,
        requested: &[String],
        standard: Option<&str>,
        fwd_flags: &[String],
        bwd_flags: &[String],
    ) -> Result<Admission, Error> {
        let passes_for = |flags: &[String]| -> Result<Vec<(String, Pass, Macros)>, Error> {
            let mut out = Vec::new();
            for t in requested {
                let m = Macros::for_compile(ck, t, Pass::Device, standard, flags)?;
                out.push((t.clone(), Pass::Device, m));
            }
            // The host pass is one for every target.
            let host_target = requested.first().map_or("", String::as_str);
            let m = Macros::for_compile(ck, host_target, Pass::Host, standard, flags)?;
            out.push(("host".to_string(), Pass::Host, m));
            Ok(out)
        };
        Ok(Admission {
            requested: requested.to_vec(),
            passes: [passes_for(fwd_flags)?, passes_for(bwd_flags)?],
            decided: Mutex::new(HashMap::new()),
        })
    }

    /// The requested targets that keep the blob `d` read from `path`.
    pub fn targets(&self, d: &BlobDecl, path: &Path) -> Result<Vec<String>, Error> {
        let Some(skeleton) = &d.skeleton else {
            return Ok(self.requested.clone());
        };
        let set = usize::from(d.kind.starts_with("bwd"));
        let key = (skeleton.to_string(), set);
        if let Some(r) = self.decided.lock().ok().and_then(|m| m.get(&key).cloned()) {
            return r.map_err(|(line, why)| parse(path, line, why));
        }
        let r = self.decide(skeleton, &self.passes[set]);
        if let Ok(mut m) = self.decided.lock() {
            m.insert(key, r.clone());
        }
        r.map_err(|(line, why)| parse(path, line, why))
    }

    fn decide(
        &self,
        skeleton: &Skeleton,
        passes: &[(String, Pass, Macros)],
    ) -> Result<Vec<String>, (usize, String)> {
        let mut host_keeps = true;
        let mut device = Vec::new();
        for (target, pass, macros) in passes {
            let what = match pass {
                Pass::Device => format!("the device pass for {target}"),
                Pass::Host => "the host pass".to_string(),
            };
            let kept = skeleton
                .try_run(&mut macros.clone())
                .map_err(|e| (e.line, format!("{} (in {what})", e.why)))?;
            let all = kept.iter().all(|k| *k);
            if !all && kept.iter().any(|k| *k) {
                return Err((
                    1,
                    format!(
                        "{what} keeps some of the blob's specialisations and not others: \
                         its conditionals must keep all or none"
                    ),
                ));
            }
            match pass {
                Pass::Device if all => device.push(target.clone()),
                Pass::Device => {}
                Pass::Host => host_keeps = all,
            }
        }
        Ok(if host_keeps { device } else { Vec::new() })
    }
}

fn parse(path: &Path, line: usize, why: String) -> Error {
    Error::Parse {
        file: Some(path.to_path_buf()),
        line,
        why,
    }
}

/// Marks each blob no requested target keeps as [`Role::OtherArch`];
/// returns the targets keeping each file (none for files that are no
/// blob). A blob is for the requested targets that keep it, whatever its
/// name or `Arch` tag says: CK's `_gfx9` split-KV blobs are guarded by
/// `defined(__gfx9__)` and run on gfx950 too.
pub(crate) fn admit_targets(
    files: &mut [GeneratedFile],
    admission: &Admission,
) -> Result<Vec<Vec<String>>, Error> {
    let mut targets_of = Vec::with_capacity(files.len());
    for f in files {
        let admitted = match &f.role {
            Role::Blob(d) => admission.targets(d, &f.path)?,
            _ => Vec::new(),
        };
        if admitted.is_empty() {
            let role = std::mem::replace(&mut f.role, Role::Host);
            f.role = match role {
                Role::Blob(d) => Role::OtherArch(d),
                other => other,
            };
        }
        targets_of.push(admitted);
    }
    Ok(targets_of)
}

/// One line per kind of blob no requested target keeps: the count, the
/// first such blob and the conditions around its specialisations.
pub(crate) fn left_out_warnings(files: &[GeneratedFile], requested: &[String]) -> Vec<String> {
    let mut by_kind: BTreeMap<&str, (usize, &GeneratedFile, &BlobDecl)> = BTreeMap::new();
    for f in files {
        if let Role::OtherArch(d) = &f.role {
            by_kind.entry(&d.kind).or_insert((0, f, d)).0 += 1;
        }
    }
    by_kind
        .into_iter()
        .map(|(kind, (n, f, d))| {
            let conditions = d
                .skeleton
                .as_ref()
                .map(|s| s.conditions_of(0).join(", inside it "))
                .filter(|c| !c.is_empty())
                .unwrap_or_else(|| "no condition".into());
            format!(
                "{n} {kind} blob{} kept by none of the requested targets ({}) {} not recorded, \
                 e.g. {} under `{conditions}`",
                if n == 1 { "" } else { "s" },
                requested.join(", "),
                if n == 1 { "is" } else { "are" },
                escape(&f.rel),
                conditions = escape(&conditions),
            )
        })
        .collect()
}
