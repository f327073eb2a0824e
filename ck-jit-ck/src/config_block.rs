//! The macros of one compile of CK code: the compiler's predefined
//! macros and the `-D`/`-U` flags ([`Macros`]), then the block at the top
//! of the CK version's `ck_tile/core/config.hpp`, run as a blob's
//! conditionals are run ([`Skeleton`]). It reads that one file and starts
//! no program.

use std::path::Path;

use crate::guard::Skeleton;
use crate::macros::{directive_word, Macros, Pass};

impl Macros {
    /// Runs the block at the top of CK's `ck_tile/core/config.hpp` (every
    /// directive before its first `#include`: the family macros) with
    /// these macros, and marks every macro the rest of the file defines,
    /// and that is not already defined, as
    /// [`Def::Unknown`](crate::macros::Def::Unknown): whether and how it is
    /// defined depends on what the block cannot see (the HIP version, the
    /// host compiler).
    pub fn with_config(&mut self, config: &str) -> Result<&mut Macros, (usize, String)> {
        let block_end = config
            .lines()
            .scan(0usize, |at, l| {
                let start = *at;
                *at += l.len() + 1;
                Some((start, l))
            })
            .find(|(_, l)| directive_word(l) == Some("include"))
            .map_or(config.len(), |(start, _)| start);
        let (block, rest) = config.split_at(block_end);
        let skeleton = Skeleton::of_source(block, &[]).map_err(|e| (e.line, e.why))?;
        skeleton
            .try_run(self)
            .map_err(|e| (e.line, e.why.to_string()))?;
        for line in rest.lines() {
            if directive_word(line) != Some("define") {
                continue;
            }
            let d = line.trim_start().trim_start_matches('#').trim_start();
            let name: String = d["define".len()..]
                .trim_start()
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() && self.get(&name).is_none() {
                self.define_unknown(
                    &name,
                    None,
                    "ck_tile/core/config.hpp defines it under conditions the build does not follow",
                );
            }
        }
        Ok(self)
    }

    /// [`predefined`](Self::predefined), the `flags`' `-D`/`-U`, then the
    /// config block of the CK tree `ck` ([`with_config`](Self::with_config)),
    /// when it has `include/ck_tile/core/config.hpp`.
    pub fn for_compile(
        ck: &Path,
        target: &str,
        pass: Pass,
        standard: Option<&str>,
        flags: &[String],
    ) -> Result<Macros, crate::Error> {
        let mut m = Macros::predefined(target, pass, standard);
        m.apply_flags(flags);
        let path = ck.join("include/ck_tile/core/config.hpp");
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                m.with_config(&text).map_err(|(line, why)| crate::Error::Parse {
                    file: Some(path.clone()),
                    line,
                    why,
                })?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(crate::error::io_err(&path)(e)),
        }
        Ok(m)
    }
}
