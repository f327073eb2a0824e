//! Lazy dispatchers for C++ consumers, whatever shape CK gives them: CK's
//! own dispatchers (`fmha_*_api.cpp`) are compiled unchanged, and linked
//! with generated *stubs*: one definition of every explicit specialisation
//! the recorded blobs define, each resolving its blob through ck-jit's C
//! ABI (`ck_jit_resolve_prefix` of `ck_jit.h`, or `ck_jit_resolve_with`
//! and the manifest path the macro `CK_JIT_STUB_MANIFEST` gives, when the
//! stubs are compiled with it) on its first call and forwarding every call
//! to it.
//!
//! A stub has the declaration of the specialisation it stands for (its
//! return type, template arguments with the blob's aliases expanded, and
//! parameters, as the blob writes them), so the dispatcher's call links to
//! it exactly as it would to the blob; how many template arguments an
//! entry takes, whether it is called from an `if constexpr` or a
//! per-architecture section, is the compiler's business, not this module's.
//! A dispatcher call for which no blob exists is reported, with its file
//! and line, before anything is written (see [`super::calls`]).
//!
//! After the first call a stub costs a function-local static's guard check
//! and an indirect call; one of an operation's several calls ([`CallOrder`]:
//! CK's bwd kernels, a splitkv pair) an atomic load, a check that its
//! thread holds no call (a thread-local flag, read in the same branch),
//! and an indirect call.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use super::calls::specialisation_key;
use super::decl::{self, Specialisation};
use super::derived;
use super::error::{io_err, Error};
use super::index::IndexedBlob;
use super::preset::CkFmhaFiles;
use super::symbol::mangled_template_prefix;
use ck_jit_build::assemble::write_if_changed;

/// How many blobs one stub file defines at most. Every file parses CK's
/// headers again, which costs more than its specialisations: one file per
/// group is cheapest (CK 2025-11's 3,932 fwd blobs: 16.6 s of CPU in one
/// file, 68 s in eight).
pub const BLOBS_PER_STUB_FILE: usize = 4096;

/// The stub sources written for a set of blobs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stubs {
    /// The files written, sorted.
    pub files: Vec<PathBuf>,
    /// How many specialisations they define in all.
    pub specialisations: usize,
    /// The blobs each dispatcher call runs together (CK's bwd kernels, a
    /// splitkv pair; [`CallCheck::groups`](super::calls::CallCheck)), by
    /// name: what [`Manifest::together`](ck_jit_build::manifest::Manifest) records.
    pub together: Vec<Vec<String>>,
}

/// Writes stub sources for every recorded blob of `files` into `dir`
/// (created if needed; unchanged files are not rewritten), grouped by
/// manifest group, [`BLOBS_PER_STUB_FILE`] blobs a file.
///
/// Every dispatcher's calls are checked first
/// ([`CkFmhaFiles::check_dispatchers`]): calls no blob answers are one
/// error listing each with its file and line, and nothing is written.
///
/// A build that reused the last one's manifest finds the stubs that build
/// wrote to `dir` by a stamp there (`.ck_jit_stubs.stamp`) and makes them
/// again only when one of them changed since.
pub fn write_stubs(files: &CkFmhaFiles, dir: &Path) -> Result<Stubs, Error> {
    let stamp = derived::Stamp::new(dir, "stubs", files.made_from.as_deref());
    if let Some(kept) = stamp.as_ref().and_then(derived::Stamp::load) {
        if let Some((n, sets)) = kept.extra.split_once('\n') {
            if let Ok(specialisations) = n.parse() {
                return Ok(Stubs {
                    files: kept.files,
                    specialisations,
                    together: derived::sets_of(sets),
                });
            }
        }
    }
    if let Some(stamp) = &stamp {
        stamp.forget();
    }
    let out = make_stubs(files, dir)?;
    if let (Some(stamp), Some(sets)) = (stamp, derived::sets_text(&out.together)) {
        stamp.keep(&out.files, &format!("{}\n{sets}", out.specialisations));
    }
    Ok(out)
}

/// [`write_stubs`] with no stamp.
fn make_stubs(files: &CkFmhaFiles, dir: &Path) -> Result<Stubs, Error> {
    let check = files.check_dispatchers()?;
    if !check.unresolved.is_empty() {
        return Err(files.unresolved_error(check.unresolved));
    }
    fs::create_dir_all(dir).map_err(io_err(dir))?;
    let index = files.index()?.detail()?;
    let (generated, manifest) = (files.try_files()?, files.try_manifest()?);
    let order = {
        let mut returns: BTreeMap<&str, &str> = BTreeMap::new();
        for b in index.recorded(generated) {
            for s in &b.specialisations {
                returns.entry(&s.template).or_insert(&s.returns);
            }
        }
        CallOrder::new(&check.sequences, |t| returns.get(t) == Some(&"void"))
    };
    let mut by_group: BTreeMap<String, Vec<&IndexedBlob>> = BTreeMap::new();
    for b in index.recorded(generated) {
        let group = manifest
            .blob(&b.name)
            .map(|m| manifest.group_of(m).name.clone())
            .unwrap_or_default();
        by_group.entry(group).or_default().push(b);
    }
    let mut out = Stubs {
        together: check.groups,
        ..Stubs::default()
    };
    for (group, blobs) in by_group {
        for (i, chunk) in blobs.chunks(BLOBS_PER_STUB_FILE).enumerate() {
            let parts: Vec<StubPart<'_>> = chunk
                .iter()
                .map(|b| {
                    (
                        b.name.as_str(),
                        b.includes.as_slice(),
                        b.specialisations.as_slice(),
                    )
                })
                .collect();
            let (text, n) = stubs_of(&parts, &order);
            let path = dir.join(format!("ck_jit_stubs_{group}_{i}.cpp"));
            write_if_changed(&path, &text).map_err(io_err(&path))?;
            out.files.push(path);
            out.specialisations += n;
        }
    }
    out.files.sort();
    Ok(out)
}

/// Which stubs take part in an operation a dispatcher runs as several
/// blob calls (CK's bwd: `dot_do_o`, `dq_dk_dv`, `convert_dq`; splitkv:
/// the split and the combine kernel), and which of them may hold their
/// call until the next one is made.
///
/// When a dispatcher's first call of an operation reaches a cold blob
/// that several operations share (one `dot_do_o` kernel serves hundreds of
/// `dq_dk_dv` kernels), nothing yet says which blobs come with it:
/// compiling it at once would compile it alone, and the rest after it. A
/// *leading* stub instead asks the runtime whether to wait
/// (`ck_jit_may_defer`); if so it keeps a copy of its arguments and
/// returns, and the next stub called on the same thread compiles both
/// blobs and every blob certain to come with them together
/// (`ck_jit_prepare_after`), runs the held call, then its own. The GPU sees
/// the launches in the same order on the same thread; the first call of
/// the operation costs about its slowest blob.
///
/// A call may wait only where the dispatcher's source shows another call
/// made after it whenever it is made: a specialisation returning `void` is
/// *leading* when, in every run of calls
/// ([`CallCheck::sequences`](super::calls::CallCheck)) it appears in, each
/// of its calls is followed by a call of another specialisation returning
/// `void`. A specialisation that returns a value never waits. Should the
/// next call never come on that thread, the held call runs at the
/// thread's exit, with a message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallOrder {
    /// Specialisations (`calls::specialisation_key` form) whose call may
    /// wait for the next.
    pub leading: BTreeSet<String>,
    /// Specialisations called in a sequence of two or more: their stubs
    /// run a held call before their own.
    pub members: BTreeSet<String>,
}

impl CallOrder {
    /// The templates the specialisations of `sequences` belong to: whose
    /// return types the order asks for.
    pub fn templates(sequences: &[Vec<String>]) -> BTreeSet<&str> {
        sequences
            .iter()
            .flatten()
            .map(|k| k.split_once('<').map_or(k.as_str(), |(t, _)| t))
            .collect()
    }

    /// The order of `sequences`, with `returns_void(template)` saying
    /// whether a template's specialisations return `void`. Only the
    /// crate's own dispatcher check makes `sequences`.
    pub(crate) fn new(sequences: &[Vec<String>], returns_void: impl Fn(&str) -> bool) -> CallOrder {
        let template = |k: &str| k.split_once('<').map_or(k, |(t, _)| t).to_string();
        let mut out = CallOrder::default();
        let mut last = BTreeSet::new();
        for seq in sequences {
            let distinct: BTreeSet<&String> = seq.iter().collect();
            if distinct.len() >= 2 {
                out.members.extend(seq.iter().cloned());
            }
            let voids: Vec<&String> = seq.iter().filter(|k| returns_void(&template(k))).collect();
            for (i, k) in voids.iter().enumerate() {
                if voids[i + 1..].iter().any(|l| l != k) {
                    out.leading.insert((*k).clone());
                } else {
                    last.insert((*k).clone());
                }
            }
        }
        out.leading
            .retain(|k| !last.contains(k) && out.members.contains(k));
        out
    }
}

/// The stub source for `blobs` (name, source text): their `#include`s,
/// then one forwarding definition per specialisation. Returns the text and
/// how many specialisations it defines. No call waits for another (the
/// stubs [`write_stubs`] writes with the dispatchers' [`CallOrder`] let
/// them).
pub fn stub_source(blobs: &[(String, String)]) -> Result<(String, usize), Error> {
    stub_source_ordered(blobs, &CallOrder::default())
}

/// [`stub_source`], with the stubs of `order`'s members running a held
/// call before their own, and those of its leading specialisations
/// holding theirs when the runtime says so. Only the crate's own
/// dispatcher check makes the order, so this is no public API.
pub fn stub_source_ordered(
    blobs: &[(String, String)],
    order: &CallOrder,
) -> Result<(String, usize), Error> {
    let mut read = Vec::with_capacity(blobs.len());
    for (name, text) in blobs {
        read.push((name.as_str(), include_lines(text), decl::specialisations(text)?));
    }
    let parts: Vec<StubPart<'_>> = read
        .iter()
        .map(|(n, i, s)| (*n, i.as_slice(), s.as_slice()))
        .collect();
    Ok(stubs_of(&parts, order))
}

/// The distinct `#include` lines of a source, in order: what a stub of
/// its specialisations includes.
pub(crate) fn include_lines(text: &str) -> Vec<String> {
    let mut includes: Vec<String> = Vec::new();
    for line in text.lines() {
        let l = line.trim();
        if l.starts_with("#include") && !includes.iter().any(|i| i == l) {
            includes.push(l.to_string());
        }
    }
    includes
}

/// A blob as the stubs need it: its name, `#include` lines and
/// specialisations.
pub(crate) type StubPart<'a> = (&'a str, &'a [String], &'a [Specialisation]);

/// The stub source of `blobs`, and how many specialisations it defines.
pub(crate) fn stubs_of(blobs: &[StubPart<'_>], order: &CallOrder) -> (String, usize) {
    let mut includes: Vec<&str> = Vec::new();
    let mut bodies = String::new();
    let mut n = 0;
    let mut in_sequence = false;
    for (name, blob_includes, specs) in blobs {
        for l in blob_includes.iter() {
            if !includes.contains(&l.as_str()) {
                includes.push(l);
            }
        }
        for s in specs.iter() {
            let key = specialisation_key(&s.template, &s.args);
            let part = if order.leading.contains(&key) {
                Part::Leading
            } else if order.members.contains(&key) {
                Part::Member
            } else {
                Part::Alone
            };
            in_sequence |= part != Part::Alone;
            write_stub(&mut bodies, name, s, part);
            n += 1;
        }
    }
    let mut out = String::from(
        "// Generated by ck-jit-ck. Every explicit specialisation the blobs\n\
         // below define, as a definition that compiles and loads its blob\n\
         // through ck-jit on first call (ck_jit.h) and forwards to it. Compile\n\
         // with CK's own dispatchers, unchanged, and link with ck-jit-capi.\n\n",
    );
    // The functions of ck_jit.h the stubs call, declared here so that
    // a stub file compiles without the header on its include path.
    out.push_str(
        "#include <atomic>\n#include <cstdio>\n#include <cstdlib>\n#include <functional>\n\
         #include <tuple>\n#include <type_traits>\n#include <utility>\n\n\
         extern \"C\" {\n\
         typedef void (*ck_jit_fn)(void);\n\
         ck_jit_fn ck_jit_resolve_prefix(const char* blob, const char* symbol_prefix);\n\
         ck_jit_fn ck_jit_resolve_with(const char* manifest, const char* blob, const char* symbol_prefix);\n\
         const char* ck_jit_last_error(void);\n\
         int ck_jit_stub_failed(const char* blob);\n\
         int ck_jit_may_defer(const char* manifest, const char* blob);\n\
         int ck_jit_prepare_after(const char* manifest, const char* earlier, const char* blob);\n\
         }\n",
    );
    for i in &includes {
        out.push_str(i);
        out.push('\n');
    }
    out.push_str(
        "\n#if !defined(__HIP_DEVICE_COMPILE__)\n\nnamespace {\n\n\
         // What a call whose blob cannot be had returns: CK's \"no kernel\"\n\
         // (a negative time), -1 for other numbers, an empty value else.\n\
         template <class R>\nR ck_jit_stub_no_kernel()\n{\n    \
         if constexpr(std::is_void_v<R>)\n        return;\n    \
         else if constexpr(std::is_arithmetic_v<R> && !std::is_same_v<R, bool>)\n        return R(-1);\n    \
         else\n        return R{};\n}\n\n\
         // The entry point of blob, or nullptr when it cannot be had: the\n\
         // reason is then said once and kept for the thread\n\
         // (ck_jit_last_error), or the process aborts (CK_JIT_ON_FAILURE=abort).\n\
         template <class F>\nF ck_jit_stub_resolve(const char* blob, const char* prefix)\n{\n    \
         #ifdef CK_JIT_STUB_MANIFEST\n    \
         ck_jit_fn fn = ck_jit_resolve_with(CK_JIT_STUB_MANIFEST, blob, prefix);\n\
         #else\n    \
         ck_jit_fn fn = ck_jit_resolve_prefix(blob, prefix);\n\
         #endif\n    \
         if(fn == nullptr && ck_jit_stub_failed(blob) != 0)\n        std::abort();\n    \
         return reinterpret_cast<F>(fn);\n}\n\n} // namespace\n\n",
    );
    // Only a file with a stub of a sequence needs (and links against) the
    // held calls' functions.
    if in_sequence {
        out.push_str(HELD_CALLS);
    }
    out.push_str(&bodies);
    out.push_str("#endif // !__HIP_DEVICE_COMPILE__\n");
    (out, n)
}

/// The stubs' part in their dispatchers' call sequences ([`CallOrder`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    /// Called on its own: resolves on its first call.
    Alone,
    /// Called after others: runs a held call first.
    Member,
    /// Always followed by another call: may hold its own.
    Leading,
}

/// The stubs' code for held calls ([`CallOrder`]). The held call and the
/// flag saying the thread holds one are per thread, shared by every stub
/// file of a library (inline variables of a namespace named with this
/// code's version: v2 since the flag replaced v1's process-wide count);
/// the rest is per file, beside `ck_jit_stub_resolve`.
///
/// The warm path of a sequence stub reads the slot (an acquire load) and
/// the flag, one branch on both. The flag is a `bool`, constant-initialised
/// and trivially destructible, declared initial-exec: a library loaded at
/// run time (aiter's, by Python) reads it at a fixed offset from the
/// thread pointer, with no call of `__tls_get_addr` or of a TLS wrapper.
/// Such a library takes static TLS space, which glibc has little of to
/// spare for libraries loaded after the program started; where loading it
/// fails ("cannot allocate memory in static TLS block"), compiling the
/// stubs with `CK_JIT_STUB_TLS_DYNAMIC` defined drops the attribute (the
/// flag is then reached as the compiler's default TLS model for the code
/// says: a call of `__tls_get_addr` in a shared library). The
/// `held_call` object, which has a destructor, is touched on the rare
/// path only.
const HELD_CALLS: &str = r#"// Run at each entry of a sequence stub's rare path; a program defines it
// to observe when its stubs leave the warm path.
#ifndef CK_JIT_STUB_ON_SLOW_PATH
#define CK_JIT_STUB_ON_SLOW_PATH()
#endif

namespace ck_jit_stub_v2 {

// A call held until the next blob call of its operation is made on this
// thread (ck-jit-build's CallOrder). Run at thread exit should that call
// never come, which the dispatchers' source says it does.
struct held_call
{
    const char* blob = nullptr;
    std::function<void()> run;
    ~held_call();
};
inline thread_local held_call held;

// Whether this thread holds a call: what a sequence stub's warm path
// checks, beside its slot. Initial-exec, so that a library loaded at run
// time reads it without a call; CK_JIT_STUB_TLS_DYNAMIC drops that, for a
// process whose static TLS space is used up.
#ifdef CK_JIT_STUB_TLS_DYNAMIC
inline thread_local bool held_here = false;
#else
inline thread_local bool held_here __attribute__((tls_model("initial-exec"))) = false;
#endif

inline void run_held(const char* next)
{
    held_call& h = held;
    if(h.blob == nullptr)
        return;
    const char* blob = h.blob;
    std::function<void()> run = std::move(h.run);
    h.run = nullptr;
    h.blob = nullptr;
    held_here = false;
    if(next != nullptr)
    {
#ifdef CK_JIT_STUB_MANIFEST
        ck_jit_prepare_after(CK_JIT_STUB_MANIFEST, blob, next);
#else
        ck_jit_prepare_after(nullptr, blob, next);
#endif
    }
    run();
}

inline held_call::~held_call()
{
    if(blob != nullptr)
    {
        std::fprintf(stderr,
                     "ck-jit: the call of blob %s waited for the next call of its operation, "
                     "which never came; it runs now, at thread exit\n",
                     blob);
        run_held(nullptr);
    }
}

} // namespace ck_jit_stub_v2

namespace {

template <class F>
F ck_jit_stub_load(std::atomic<F>& slot, const char* blob, const char* prefix)
{
    F fn = slot.load(std::memory_order_acquire);
    if(fn == nullptr)
    {
        fn = ck_jit_stub_resolve<F>(blob, prefix);
        if(fn != nullptr)
            slot.store(fn, std::memory_order_release);
    }
    return fn;
}

// The rare path of a sequence's stub: runs this thread's held call, then
// resolves (or, for a leading stub whose blob would be compiled alone,
// holds this call: returns nullptr).
template <bool Leading, class F, class... A>
__attribute__((noinline, cold)) F
ck_jit_stub_slow(std::atomic<F>& slot, const char* blob, const char* prefix, const A&... a)
{
    CK_JIT_STUB_ON_SLOW_PATH();
    // The call held before this one runs first, its blob compiled
    // together with this one and what comes with both.
    ck_jit_stub_v2::run_held(blob);
    F fn = slot.load(std::memory_order_acquire);
    if constexpr(Leading)
    {
#ifdef CK_JIT_STUB_MANIFEST
        const char* manifest = CK_JIT_STUB_MANIFEST;
#else
        const char* manifest = nullptr;
#endif
        if(fn == nullptr && ck_jit_may_defer(manifest, blob) == 1)
        {
            ck_jit_stub_v2::held_call& h = ck_jit_stub_v2::held;
            h.run = [&slot, blob, prefix, args = std::make_tuple(a...)]() mutable {
                if(F f = ck_jit_stub_load(slot, blob, prefix))
                    std::apply(f, args);
            };
            h.blob = blob;
            ck_jit_stub_v2::held_here = true;
            return nullptr;
        }
    }
    if(fn == nullptr)
        fn = ck_jit_stub_load(slot, blob, prefix);
    return fn;
}

// A stub of a call sequence: once resolved, one load, one check (the slot
// and this thread's flag together) and the call, while this thread holds
// no call; other threads' held calls are not its business.
template <bool Leading, class F, class... A>
inline __attribute__((always_inline)) decltype(auto)
ck_jit_stub_call(std::atomic<F>& slot, const char* blob, const char* prefix, A&&... a)
{
    F fn = slot.load(std::memory_order_acquire);
    // A sum, not || or |: GCC branches on each operand of those; on the
    // sum, GCC and Clang both make one branch.
    if(__builtin_expect(static_cast<int>(fn == nullptr) +
                            static_cast<int>(ck_jit_stub_v2::held_here),
                        0))
    {
        fn = ck_jit_stub_slow<Leading, F, std::decay_t<A>...>(slot, blob, prefix, a...);
        // Held (a leading call), or the blob cannot be had (said once).
        if(fn == nullptr)
            return ck_jit_stub_no_kernel<std::invoke_result_t<F, A&&...>>();
    }
    return fn(std::forward<A>(a)...);
}

} // namespace

"#;

/// One forwarding definition.
fn write_stub(out: &mut String, blob: &str, s: &Specialisation, part: Part) {
    let args = s.args.join(", ");
    let target = format!("{}<{args}>", s.template);
    let mut params = Vec::new();
    let mut names = Vec::new();
    for (i, p) in s.params.iter().enumerate() {
        let toks: Vec<&str> = p.split_whitespace().collect();
        let named = toks.len() >= 2
            && toks.last().is_some_and(|t| {
                t.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                    && t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            })
            && toks[toks.len() - 2] != "::";
        if named {
            params.push(p.clone());
            names.push(toks[toks.len() - 1].to_string());
        } else {
            params.push(format!("{p} p{i}"));
            names.push(format!("p{i}"));
        }
    }
    let prefix = mangled_template_prefix(&s.template);
    let (returns, params, names) = (&s.returns, params.join(", "), names.join(", "));
    let _ = match part {
        Part::Alone => write!(
            out,
            "// {blob}\ntemplate <>\n{returns} {target}({params})\n{{\n    \
             static std::atomic<decltype(&{target})> slot{{nullptr}};\n    \
             auto fn = slot.load(std::memory_order_acquire);\n    \
             if(__builtin_expect(fn == nullptr, 0))\n    {{\n        \
             fn = ck_jit_stub_resolve<decltype(&{target})>(\"{blob}\", \"{prefix}\");\n        \
             if(fn == nullptr)\n            return ck_jit_stub_no_kernel<{returns}>();\n        \
             slot.store(fn, std::memory_order_release);\n    }}\n    \
             return fn({names});\n}}\n\n",
        ),
        Part::Member | Part::Leading => {
            let sep = if names.is_empty() { "" } else { ", " };
            write!(
                out,
                "// {blob}\ntemplate <>\n{returns} {target}({params})\n{{\n    \
                 static std::atomic<decltype(&{target})> fn{{nullptr}};\n    \
                 return ck_jit_stub_call<{}>(fn, \"{blob}\", \"{prefix}\"{sep}{names});\n}}\n\n",
                part == Part::Leading,
            )
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_may_wait_only_where_every_run_has_another_void_call_after_it() {
        let runs: Vec<Vec<String>> = [
            &["dot<1>", "name<1>", "dq<1>", "convert<1>"][..],
            &["dot<1>", "dq<2>"],
            &["dq<3>", "name<3>"],
            &["alone<1>"],
        ]
        .iter()
        .map(|r| r.iter().map(|s| s.to_string()).collect())
        .collect();
        let o = CallOrder::new(&runs, |t| t != "name");
        // dq<2> ends a run; dq<3> is followed only by a call returning a
        // value; convert ends its run; a call alone is no member.
        assert_eq!(
            o.leading.iter().map(String::as_str).collect::<Vec<_>>(),
            ["dot<1>", "dq<1>"]
        );
        assert!(o.members.contains("dq<3>") && o.members.contains("name<1>"));
        assert!(!o.members.contains("alone<1>"));
    }

    #[test]
    fn stubs_of_a_sequence_hold_and_run_held_calls() {
        let blob = "#include \"ops.hpp\"\n\
            template<>\nvoid dot_oneshot_<d0>(const cfg& s, args a)\n{}\n\
            template<>\nint dot_id_<d0>()\n{ return 1; }\n\
            template<>\nvoid other_<d0>(int x)\n{}\n";
        let order = CallOrder {
            leading: ["dot_oneshot_<d0>".to_string()].into(),
            members: ["dot_oneshot_<d0>".to_string(), "dot_id_<d0>".to_string()].into(),
        };
        let (text, n) = stub_source_ordered(&[("b".into(), blob.into())], &order).unwrap();
        assert_eq!(n, 3);
        assert!(text.contains("namespace ck_jit_stub_v2"), "{text}");
        assert!(
            text.contains("return ck_jit_stub_call<true>(fn, \"b\", \"_Z12dot_oneshot_I\", s, a);"),
            "{text}"
        );
        assert!(
            text.contains("return ck_jit_stub_call<false>(fn, \"b\", \"_Z7dot_id_I\");"),
            "{text}"
        );
        assert!(text.contains("fn = ck_jit_stub_resolve<decltype(&other_<d0>)>(\"b\", \"_Z6other_I\");"), "{text}");
        // Without an order, no held calls at all; nor in a file none of
        // whose stubs is in a sequence (it needs no more of ck_jit.h).
        let (plain, _) = stub_source(&[("b".into(), blob.into())]).unwrap();
        assert!(!plain.contains("ck_jit_stub_v2"), "{plain}");
        let other = blob.replace("d0", "d1");
        let (apart, _) = stub_source_ordered(&[("c".into(), other)], &order).unwrap();
        assert!(!apart.contains("ck_jit_stub_v2"), "{apart}");
    }

    #[test]
    fn every_specialisation_becomes_a_forwarder_with_its_own_declaration() {
        let blob = "#include \"fmha_fwd.hpp\"\n\
            using fmha_mask_0 = ck_tile::SimplifiedGenericAttentionMask<true>;\n\
            using trait_0 = fmha_fwd_traits_<128, FmhaFwdBf16, fmha_mask_0>;\n\
            template<>\nfloat fmha_fwd_<trait_0, ck_tile::gfx9_t>(const ck_tile::stream_config& s, fmha_fwd_args a)\n{ return 1; }\n\
            template<>\nstd::string fmha_fwd_get_name_<trait_0, ck_tile::gfx9_t>()\n{ return {}; }\n\
            template<>\nvoid fmha_x_<trait_0>(const ck_tile::stream_config&, int)\n{}\n";
        let (text, n) = stub_source(&[("b1".into(), blob.into())]).unwrap();
        assert_eq!(n, 3);
        assert!(text.contains("#include \"fmha_fwd.hpp\"\n"), "{text}");
        assert!(text.contains(
            "template <>\nfloat fmha_fwd_<fmha_fwd_traits_<128,FmhaFwdBf16,ck_tile::SimplifiedGenericAttentionMask<true>>, ck_tile::gfx9_t>(const ck_tile :: stream_config & s, fmha_fwd_args a)\n"
        ), "{text}");
        assert!(
            text.contains("(\"b1\", \"_Z9fmha_fwd_I\");\n        if(fn == nullptr)\n            return ck_jit_stub_no_kernel<float>();"),
            "{text}"
        );
        assert!(
            text.contains("(\"b1\", \"_Z18fmha_fwd_get_name_I\");\n        if(fn == nullptr)\n            return ck_jit_stub_no_kernel<std :: string>();"),
            "{text}"
        );
        // Unnamed parameters are named so they can be forwarded.
        assert!(
            text.contains("(const ck_tile :: stream_config & p0, int p1)"),
            "{text}"
        );
        assert!(text.contains("return fn(p0, p1);"), "{text}");
    }
}
