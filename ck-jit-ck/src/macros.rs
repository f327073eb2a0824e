//! The macros a compile of a blob has defined when it reaches the blob's
//! own conditionals, per target and pass: the compiler's predefined macros
//! (a table for Clang-based HIP compilers, below), then the group's
//! `-D`/`-U` flags in order, then what the CK version's
//! `ck_tile/core/config.hpp` defines from them in the block at its top
//! (read from that version's tree and run by the same rules as a blob).
//!
//! It never asks a compiler: the build script runs none. A macro the
//! build cannot know (the compiler's version, one of `config.hpp`'s later
//! macros, set from the HIP version or the flags) is kept as
//! [`Def::Unknown`], so a condition that reads it is an error naming it,
//! never a guess.
//!
//! # The predefined table
//!
//! What Clang (the compiler behind `hipcc` and `amdclang++`) defines, from
//! its `InitPreprocessor.cpp` and `Targets/AMDGPU.cpp`:
//!
//! | macro | device pass for `gfxNNN` | host pass |
//! |---|---|---|
//! | `__clang__`, `__HIP__`, `__HIPCC__` | 1 | 1 |
//! | `__HIP_PLATFORM_AMD__`, `__HIP_PLATFORM_HCC__` (`hipcc`'s command line, `-D__HIP_PLATFORM_AMD__=`) | defined, empty | same |
//! | `__HIP_DEVICE_COMPILE__` | 1 | undefined |
//! | `__AMDGCN__`, `__AMDGPU__` | 1 | undefined |
//! | `__gfxNNN__` (the processor, `-` as `_` for a generic target) | 1 | undefined |
//! | `__GFXN__` (the family in upper case: `__GFX9__`, `__GFX11__`) | 1 | undefined |
//! | `__AMDGCN_WAVEFRONT_SIZE`, `__AMDGCN_WAVEFRONT_SIZE__` | 64 (gfx9 and older), 32 (gfx10 and newer; `-mwavefrontsize64` is not modelled) | undefined |
//! | `__x86_64__`, `__linux__` (the host this crate builds for) | the host's, as Clang defines the aux target's | 1 |
//! | `__cplusplus` | from `-std=c++N` | same |
//! | `__clang_major__`, `__clang_minor__`, `__clang_patchlevel__`, `__clang_version__`, `__GNUC__`, `__GNUC_MINOR__` | unknown (the compiler's version) | same |
//! | `HIP_VERSION`, `HIP_VERSION_MAJOR`, `HIP_VERSION_MINOR`, `HIP_VERSION_PATCH` (`hip/hip_version.h`, which `config.hpp` includes) | unknown | same |
//!
//! Clang defines the lower-case family macros CK tests (`__gfx9__`,
//! `__gfx94__`, `__gfx11__`) nowhere: CK's `config.hpp` does, from the
//! processor's macro, and differently per version (CK 2024-10's has no
//! `gfx950` in `__gfx9__`). Any other identifier is undefined, hence 0.

use std::collections::BTreeMap;


/// What a macro is defined as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Def {
    /// An object-like macro and its replacement list.
    Object(String),
    /// A function-like macro (its use in a condition is not supported).
    Function,
    /// A macro whose value (and, when `defined` is `None`, whether it is
    /// defined at all) is not known at build time.
    Unknown {
        /// Whether it is defined, where that is known.
        defined: Option<bool>,
        /// Why it is not known, for the error.
        why: String,
    },
}

/// A set of macro definitions, as the preprocessor holds them at one point
/// of a compile.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Macros {
    defs: BTreeMap<String, Def>,
}

/// Which of a HIP compile's passes: the device pass for one target or the
/// host pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Pass {
    /// The device pass (`__HIP_DEVICE_COMPILE__` defined).
    Device,
    /// The host pass.
    Host,
}

impl Macros {
    /// No macro defined.
    pub fn new() -> Macros {
        Macros::default()
    }

    /// `#define name body`.
    pub fn define(&mut self, name: &str, body: &str) -> &mut Macros {
        self.defs
            .insert(name.to_string(), Def::Object(body.trim().to_string()));
        self
    }

    /// Marks `name` as not known at build time (see [`Def::Unknown`]).
    pub fn define_unknown(&mut self, name: &str, defined: Option<bool>, why: &str) -> &mut Macros {
        self.defs.insert(
            name.to_string(),
            Def::Unknown {
                defined,
                why: why.to_string(),
            },
        );
        self
    }

    /// `#define name(...) ...`.
    pub fn define_function(&mut self, name: &str) -> &mut Macros {
        self.defs.insert(name.to_string(), Def::Function);
        self
    }

    /// `#undef name`.
    pub fn undefine(&mut self, name: &str) -> &mut Macros {
        self.defs.remove(name);
        self
    }

    /// The definition of `name`, if it has one.
    pub fn get(&self, name: &str) -> Option<&Def> {
        self.defs.get(name)
    }

    /// Every definition, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Def)> {
        self.defs.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Applies a `#define` or `#undef` directive's text after the
    /// directive name (`NAME body`, `NAME(x) body`, `NAME`).
    pub(crate) fn directive(&mut self, word: &str, rest: &str) -> Result<(), String> {
        let rest = rest.trim_start();
        let len = rest
            .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .unwrap_or(rest.len());
        let name = &rest[..len];
        if name.is_empty() || name.as_bytes()[0].is_ascii_digit() {
            return Err(format!("macro names must be identifiers (#{word} {rest})"));
        }
        if name == "defined" {
            return Err("\"defined\" cannot be used as a macro name".into());
        }
        match word {
            "undef" => {
                self.undefine(name);
            }
            _ if rest[len..].starts_with('(') => {
                self.define_function(name);
            }
            _ => {
                self.define(name, strip_comments(&rest[len..]).trim());
            }
        }
        Ok(())
    }

    /// Applies the `-D` and `-U` flags of a command line in order, as the
    /// compiler does (`-DX` is `X` as 1, `-DX=v` is `X` as `v`, `-D X`
    /// with the name in the next argument too).
    ///
    /// # Example
    ///
    /// ```
    /// use ck_jit_ck::macros::{Def, Macros};
    /// let mut m = Macros::new();
    /// m.apply_flags(["-DA", "-DB=2", "-UA", "-O3"]);
    /// assert_eq!(m.get("A"), None);
    /// assert_eq!(m.get("B"), Some(&Def::Object("2".into())));
    /// ```
    pub fn apply_flags<I, S>(&mut self, flags: I) -> &mut Macros
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let flags: Vec<S> = flags.into_iter().collect();
        let mut i = 0;
        while i < flags.len() {
            let f = flags[i].as_ref();
            i += 1;
            let (define, arg) = if let Some(a) = f.strip_prefix("-D") {
                (true, a)
            } else if let Some(a) = f.strip_prefix("-U") {
                (false, a)
            } else {
                continue;
            };
            let arg = if arg.is_empty() {
                i += 1;
                match flags.get(i - 1) {
                    Some(a) => a.as_ref(),
                    None => break,
                }
            } else {
                arg
            };
            match (define, arg.split_once('=')) {
                (true, Some((name, value))) => self.define(name, value),
                (true, None) => self.define(arg, "1"),
                (false, _) => self.undefine(arg),
            };
        }
        self
    }

    /// The predefined macros of a Clang-based HIP compiler's `pass` for
    /// `target` (see the table in the module docs), compiling as
    /// `-std=c++<standard>` when given.
    ///
    /// # Example
    ///
    /// ```
    /// use ck_jit_ck::macros::{Def, Macros, Pass};
    /// let m = Macros::predefined("gfx942", Pass::Device, Some("20"));
    /// assert_eq!(m.get("__gfx942__"), Some(&Def::Object("1".into())));
    /// assert_eq!(m.get("__GFX9__"), Some(&Def::Object("1".into())));
    /// assert_eq!(m.get("__gfx9__"), None, "CK's config.hpp defines it, not the compiler");
    /// ```
    pub fn predefined(target: &str, pass: Pass, standard: Option<&str>) -> Macros {
        let mut m = Macros::new();
        for name in ["__clang__", "__HIP__", "__HIPCC__"] {
            m.define(name, "1");
        }
        // hipcc's command line defines them empty (`-D__HIP_PLATFORM_AMD__=`).
        for name in ["__HIP_PLATFORM_AMD__", "__HIP_PLATFORM_HCC__"] {
            m.define(name, "");
        }
        for name in ["__x86_64__", "__linux__"] {
            m.define(name, "1");
        }
        let version = "it is the compiler's version";
        for name in [
            "__clang_major__",
            "__clang_minor__",
            "__clang_patchlevel__",
            "__clang_version__",
            "__GNUC__",
            "__GNUC_MINOR__",
            "__GNUC_PATCHLEVEL__",
        ] {
            m.define_unknown(name, Some(true), version);
        }
        let hip = "hip/hip_version.h sets it from the HIP installation";
        for name in [
            "HIP_VERSION",
            "HIP_VERSION_MAJOR",
            "HIP_VERSION_MINOR",
            "HIP_VERSION_PATCH",
        ] {
            m.define_unknown(name, Some(true), hip);
        }
        match standard.and_then(cplusplus) {
            Some(v) => m.define("__cplusplus", v),
            None => m.define_unknown("__cplusplus", Some(true), "the language standard"),
        };
        if pass == Pass::Device {
            m.define("__HIP_DEVICE_COMPILE__", "1");
            m.define("__AMDGCN__", "1");
            m.define("__AMDGPU__", "1");
            let processor = target.split(':').next().unwrap_or(target);
            m.define(&format!("__{}__", processor.replace('-', "_")), "1");
            if let Some(major) = family(processor) {
                m.define(&format!("__GFX{major}__"), "1");
                let wave = if major.parse::<u32>().is_ok_and(|n| n >= 10) {
                    "32"
                } else {
                    "64"
                };
                m.define("__AMDGCN_WAVEFRONT_SIZE", wave);
                m.define("__AMDGCN_WAVEFRONT_SIZE__", wave);
            }
        }
        m
    }
}

/// `__cplusplus` for `-std=c++<standard>`.
fn cplusplus(standard: &str) -> Option<&'static str> {
    Some(match standard.trim_start_matches("gnu++").trim_start_matches("c++") {
        "11" => "201103L",
        "14" => "201402L",
        "17" => "201703L",
        "20" => "202002L",
        "23" => "202302L",
        _ => return None,
    })
}

/// The family of a processor (`9` of `gfx942`, `11` of `gfx1100`, `9` of
/// `gfx9-4-generic`): its number without the last two characters, minor
/// version and stepping.
fn family(processor: &str) -> Option<&str> {
    let version = processor.strip_prefix("gfx")?;
    let major = match version.split_once('-') {
        Some((major, _)) => major,
        None => version.get(..version.len().checked_sub(2)?)?,
    };
    (!major.is_empty() && major.bytes().all(|b| b.is_ascii_digit())).then_some(major)
}

/// The directive name of a line (`include` of `#  include <x>`), if the
/// line is a directive.
pub(crate) fn directive_word(line: &str) -> Option<&str> {
    let d = line.trim_start().strip_prefix('#')?.trim_start();
    let len = d
        .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .unwrap_or(d.len());
    Some(&d[..len])
}

/// `s` without `//` and `/* */` comments.
fn strip_comments(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(p) = rest.find('/') {
        let after = &rest[p..];
        if after.starts_with("//") {
            out.push_str(&rest[..p]);
            return out;
        }
        if let Some(comment) = after.strip_prefix("/*") {
            out.push_str(&rest[..p]);
            out.push(' ');
            rest = comment.find("*/").map_or("", |e| &comment[e + 2..]);
            continue;
        }
        out.push_str(&rest[..=p]);
        rest = &rest[p + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_family_and_wavefront_follow_the_processor() {
        let m = Macros::predefined("gfx1100", Pass::Device, None);
        assert_eq!(m.get("__GFX11__"), Some(&Def::Object("1".into())));
        assert_eq!(
            m.get("__AMDGCN_WAVEFRONT_SIZE"),
            Some(&Def::Object("32".into()))
        );
        let m = Macros::predefined("gfx9-4-generic", Pass::Device, None);
        assert!(m.get("__gfx9_4_generic__").is_some() && m.get("__GFX9__").is_some());
        let h = Macros::predefined("gfx942", Pass::Host, Some("17"));
        assert_eq!(h.get("__HIP_DEVICE_COMPILE__"), None);
        assert_eq!(h.get("__gfx942__"), None);
        assert_eq!(h.get("__cplusplus"), Some(&Def::Object("201703L".into())));
    }

    #[test]
    fn the_config_block_defines_families_and_the_rest_is_unknown() {
        let config = "#pragma once\n#if defined(__gfx942__) || \\\n defined(__gfx950__)\n\
                      #define __gfx94__\n#endif\n#include \"x.h\"\n#ifndef CK_X\n#define CK_X 1\n#endif\n\
                      #define CK_Y 2\n";
        let mut m = Macros::predefined("gfx942", Pass::Device, None);
        m.apply_flags(["-DCK_Y=3"]);
        m.with_config(config).unwrap();
        assert_eq!(m.get("__gfx94__"), Some(&Def::Object(String::new())));
        assert!(matches!(m.get("CK_X"), Some(Def::Unknown { defined: None, .. })));
        assert_eq!(m.get("CK_Y"), Some(&Def::Object("3".into())));
        let mut m = Macros::predefined("gfx1100", Pass::Device, None);
        m.with_config(config).unwrap();
        assert_eq!(m.get("__gfx94__"), None);
    }

    #[test]
    fn define_directives_take_object_and_function_macros() {
        let mut m = Macros::new();
        m.directive("define", " A 1 /* one */ // c").unwrap();
        m.directive("define", "F(x) x").unwrap();
        assert_eq!(m.get("A"), Some(&Def::Object("1".into())));
        assert_eq!(m.get("F"), Some(&Def::Function));
        m.directive("undef", "A").unwrap();
        assert_eq!(m.get("A"), None);
        assert!(m.directive("define", "").is_err());
        assert!(m.directive("define", "defined 1").is_err());
    }
}
