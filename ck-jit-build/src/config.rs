//! `ck-jit.toml`: the settings of [`Build`](crate::Build) and
//! [`BlobGroup`] without Rust code. This module only parses; every group it
//! reads goes through the same setters (and later the same checks) as one
//! written in `build.rs`, so both ways give the same manifest.
//!
//! Unknown keys are errors, so a misspelt setting is never silently ignored.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::Error;
use crate::group::BlobGroup;
use crate::manifest::SymbolSpec;

/// What cargo watches to decide when to rerun the build script, which
/// rewrites the manifest (see [`Build::watch`](crate::Build::watch)).
///
/// The manifest depends on which blob files exist, never on what they
/// hold: the runtime hashes a blob's source when it compiles, so an edited
/// blob is recompiled at its next first call whichever is chosen. But cargo
/// cannot watch only a directory's listing (a watched directory counts as
/// changed when any file under it does), and it recompiles a crate whenever
/// the crate's build script reruns, even when the script writes the same
/// bytes. So each choice trades one of: adding a blob alone is noticed, or
/// editing a blob recompiles nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Watch {
    /// The top-most directories the globs list, and the config files: a
    /// blob added, removed or renamed is recorded at the next build, and
    /// editing a blob also reruns the build script and so recompiles the
    /// crate and its binaries (the manifest stays byte-identical).
    #[default]
    BlobDirectories,
    /// The crate's `src` directory, and the config files: the manifest is
    /// rewritten when the crate's own sources change, that is when the crate
    /// is recompiled anyway, so editing, adding or removing a blob alone
    /// recompiles nothing. A blob added together with its `#[lazy_kernel]`
    /// declaration is recorded with that change; one added with no change to
    /// the crate's sources (a new member of a family, say) is recorded at
    /// the next one, or when `build.rs` or a config file changes. Blobs
    /// kept under `src` are watched with it, as with `BlobDirectories`
    /// (a `cargo:warning` says so), and a package without a `src`
    /// directory falls back to `BlobDirectories`.
    CrateSources,
}

/// What a config file contributes to a build.
#[derive(Debug)]
pub(crate) struct Config {
    /// Cache name, if the file sets one.
    pub name: Option<String>,
    /// Root, already joined to the config file's directory; that directory
    /// when the file sets none.
    pub root: PathBuf,
    /// Groups, in file order.
    pub groups: Vec<BlobGroup>,
    /// What cargo watches, if the file says.
    pub watch: Option<Watch>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    name: Option<String>,
    root: Option<PathBuf>,
    watch: Option<WatchKey>,
    #[serde(default)]
    group: Vec<GroupTable>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GroupTable {
    name: String,
    #[serde(default)]
    glob: OneOrMany,
    #[serde(default)]
    files: Vec<PathBuf>,
    #[serde(default)]
    exclude: OneOrMany,
    allow_empty: Option<bool>,
    compiler: Option<String>,
    #[serde(default)]
    flags: Vec<String>,
    #[serde(default)]
    include: Vec<PathBuf>,
    #[serde(default)]
    define: BTreeMap<String, DefineValue>,
    shared: Option<bool>,
    args_template: Option<Vec<String>>,
    cwd: Option<PathBuf>,
    symbol: Option<toml::Spanned<SymbolTable>>,
    depfile: Option<bool>,
    meta_pattern: Option<String>,
    require_meta_match: Option<bool>,
    #[serde(default)]
    meta: BTreeMap<String, String>,
    family: Option<String>,
    #[serde(default)]
    neutral: BTreeMap<String, String>,
}

/// `symbol = { exact = "..." }` or `symbol = { prefix = "..." }`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SymbolTable {
    exact: Option<String>,
    prefix: Option<String>,
}

/// `watch = "blob-directories"` or `watch = "crate-sources"`.
#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
enum WatchKey {
    BlobDirectories,
    CrateSources,
}

impl From<WatchKey> for Watch {
    fn from(key: WatchKey) -> Watch {
        match key {
            WatchKey::BlobDirectories => Watch::BlobDirectories,
            WatchKey::CrateSources => Watch::CrateSources,
        }
    }
}

/// `glob = "k/*.cpp"` or `glob = ["a/*.cpp", "b/*.cpp"]`.
#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl Default for OneOrMany {
    fn default() -> OneOrMany {
        OneOrMany::Many(Vec::new())
    }
}

impl OneOrMany {
    fn into_vec(self) -> Vec<String> {
        match self {
            OneOrMany::One(s) => vec![s],
            OneOrMany::Many(v) => v,
        }
    }
}

/// `NAME = "value"` (`-DNAME=value`), `NAME = 4` (`-DNAME=4`),
/// `NAME = true` (`-DNAME`) or `NAME = false` (not defined).
#[derive(Deserialize)]
#[serde(untagged)]
enum DefineValue {
    Text(String),
    Number(i64),
    Flag(bool),
}

/// Reads and parses the config file at `path`.
pub(crate) fn load(path: &Path) -> Result<Config, Error> {
    let text = fs::read_to_string(path).map_err(|source| Error::ReadConfig {
        path: path.to_path_buf(),
        source,
    })?;
    parse(path, &text)
}

/// Parses `text`, read from `path` (used for the root and in errors).
pub(crate) fn parse(path: &Path, text: &str) -> Result<Config, Error> {
    let file: ConfigFile = toml::from_str(text).map_err(|e| Error::ParseConfig {
        path: path.to_path_buf(),
        line: e.span().map(|s| line_of(text, s.start)),
        message: e.message().trim().replace('\n', " "),
    })?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let root = match file.root {
        Some(r) => dir.join(r),
        None => dir,
    };
    let mut groups = Vec::with_capacity(file.group.len());
    for mut table in file.group {
        let symbol = match table.symbol.take() {
            None => None,
            Some(spanned) => {
                let span = spanned.span();
                let bad = |message: &str| Error::ParseConfig {
                    path: path.to_path_buf(),
                    line: Some(line_of(text, span.start)),
                    message: format!("group '{}': {message}", table.name),
                };
                match spanned.into_inner() {
                    SymbolTable {
                        exact: Some(e),
                        prefix: None,
                    } => Some(SymbolSpec::Exact(e)),
                    SymbolTable {
                        exact: None,
                        prefix: Some(p),
                    } => Some(SymbolSpec::Prefix(p)),
                    SymbolTable {
                        exact: Some(_),
                        prefix: Some(_),
                    } => return Err(bad("`symbol` takes only one of `exact` or `prefix`")),
                    SymbolTable {
                        exact: None,
                        prefix: None,
                    } => return Err(bad("`symbol` needs one of `exact` or `prefix`")),
                }
            }
        };
        groups.push(table.into_group(symbol));
    }
    Ok(Config {
        name: file.name,
        root,
        groups,
        watch: file.watch.map(Watch::from),
    })
}

fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

impl GroupTable {
    fn into_group(self, symbol: Option<SymbolSpec>) -> BlobGroup {
        let mut g = BlobGroup::new(&self.name);
        for pattern in self.glob.into_vec() {
            g.glob(&pattern);
        }
        g.files(self.files);
        for pattern in self.exclude.into_vec() {
            g.exclude(&pattern);
        }
        if let Some(allow) = self.allow_empty {
            g.allow_empty(allow);
        }
        if let Some(compiler) = &self.compiler {
            g.compiler(compiler);
        }
        g.flags(self.flags);
        for dir in self.include {
            g.include(dir);
        }
        // A TOML table has no order; defines come in name order.
        for (name, value) in &self.define {
            match value {
                DefineValue::Text(v) => {
                    g.define(name, Some(v.as_str()));
                }
                DefineValue::Number(n) => {
                    g.define(name, Some(n.to_string().as_str()));
                }
                DefineValue::Flag(true) => {
                    g.define(name, None);
                }
                DefineValue::Flag(false) => {}
            }
        }
        if let Some(shared) = self.shared {
            g.shared(shared);
        }
        if let Some(template) = self.args_template {
            g.args_template(template);
        }
        if let Some(cwd) = self.cwd {
            g.cwd(cwd);
        }
        match symbol {
            Some(SymbolSpec::Exact(s)) => {
                g.symbol_exact(&s);
            }
            Some(SymbolSpec::Prefix(p)) => {
                g.symbol_prefix(&p);
            }
            None => {}
        }
        if let Some(depfile) = self.depfile {
            g.depfile(depfile);
        }
        if let Some(pattern) = &self.meta_pattern {
            g.meta_pattern(pattern);
        }
        if let Some(require) = self.require_meta_match {
            g.require_meta_match(require);
        }
        for (k, v) in &self.meta {
            g.meta(k, v);
        }
        if let Some(family) = &self.family {
            g.family(family);
        }
        for (k, v) in &self.neutral {
            g.neutral(k, v);
        }
        g
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FULL: &str = r#"
name = "my_kernels"
root = "tree"

[[group]]
name = "vec"
glob = ["kernels/vec_*.cpp"]
exclude = "*_api.cpp"
compiler = "clang++"
flags = ["-O2", "-std=c++17"]
include = ["include"]
define = { USE_FAST = "1", DEBUG = true, OFF = false, N = 4 }
symbol = { prefix = "vec_" }
meta_pattern = '(?P<op>[a-z]+)_(?P<dtype>f32|f64)'
meta = { family = "vec" }
shared = true
depfile = false
"#;

    #[test]
    fn a_full_file_becomes_the_same_group_as_the_setters() {
        let c = parse(Path::new("/p/ck-jit.toml"), FULL).unwrap();
        assert_eq!(c.name.as_deref(), Some("my_kernels"));
        assert_eq!(c.root, Path::new("/p/tree"));
        let mut want = BlobGroup::new("vec");
        want.glob("kernels/vec_*.cpp")
            .exclude("*_api.cpp")
            .compiler("clang++")
            .flags(["-O2", "-std=c++17"])
            .include("include")
            .define("DEBUG", None)
            .define("N", Some("4"))
            .define("USE_FAST", Some("1"))
            .symbol_prefix("vec_")
            .meta_pattern("(?P<op>[a-z]+)_(?P<dtype>f32|f64)")
            .meta("family", "vec")
            .shared(true)
            .depfile(false);
        assert_eq!(c.groups, vec![want]);
    }

    #[test]
    fn root_defaults_to_the_config_directory() {
        let c = parse(Path::new("ck-jit.toml"), "").unwrap();
        assert_eq!(c.root, Path::new("."));
        assert!(c.groups.is_empty());
        let c = parse(Path::new("/a/b/ck-jit.toml"), "").unwrap();
        assert_eq!(c.root, Path::new("/a/b"));
    }

    #[test]
    fn unknown_keys_name_the_key_the_file_and_the_line() {
        let text = "[[group]]\nname = \"g\"\nglobs = [\"*.cpp\"]\n";
        let e = parse(Path::new("/p/ck-jit.toml"), text).unwrap_err();
        let Error::ParseConfig { line, .. } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(*line, Some(3));
        let m = e.to_string();
        assert!(m.contains("globs") && m.contains("/p/ck-jit.toml"), "{m}");
        let e = parse(Path::new("c.toml"), "nme = \"x\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("nme") && e.contains("line 1"), "{e}");
        let e = parse(
            Path::new("c.toml"),
            "[[group]]\nname = \"g\"\nsymbol = { exakt = \"x\" }\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("exakt") && e.contains("line 3"), "{e}");
    }

    #[test]
    fn a_symbol_takes_exactly_one_of_exact_or_prefix() {
        for (table, says) in [
            (
                "{ exact = \"x\", prefix = \"y\" }",
                "only one of `exact` or `prefix`",
            ),
            ("{}", "needs one of `exact` or `prefix`"),
        ] {
            let text = format!("[[group]]\nname = \"g\"\nsymbol = {table}\n");
            let e = parse(Path::new("c.toml"), &text).unwrap_err();
            assert!(
                matches!(e, Error::ParseConfig { line: Some(3), .. }),
                "{e:?}"
            );
            let m = e.to_string();
            assert!(m.contains(says) && m.contains("group 'g'"), "{m}");
        }
    }

    #[test]
    fn syntax_errors_name_the_line() {
        let e = parse(Path::new("c.toml"), "name = \"x\"\n\n[[group]\n").unwrap_err();
        assert!(
            matches!(e, Error::ParseConfig { line: Some(3), .. }),
            "{e:?}"
        );
        assert!(!e.to_string().contains('\n'));
    }

    #[test]
    fn watch_takes_either_choice_and_nothing_else() {
        let parse_watch = |value: &str| {
            parse(
                Path::new("/p/ck-jit.toml"),
                &format!("watch = \"{value}\"\n"),
            )
            .map(|c| c.watch)
        };
        assert_eq!(
            parse_watch("crate-sources").unwrap(),
            Some(Watch::CrateSources)
        );
        assert_eq!(
            parse_watch("blob-directories").unwrap(),
            Some(Watch::BlobDirectories)
        );
        assert!(parse(Path::new("/p/ck-jit.toml"), FULL)
            .unwrap()
            .watch
            .is_none());
        let Err(err) = parse_watch("files") else {
            panic!("accepted")
        };
        assert!(err.to_string().contains("crate-sources"), "{err}");
    }
}
