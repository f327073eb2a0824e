/*
 * ck_jit.h: the C ABI of the ck-jit runtime.
 *
 * Resolves a kernel blob's entry point by name. The first resolve of a
 * blob compiles it (unless a cached build is found), loads it and returns
 * the entry point; the pointer stays valid for the life of the process.
 *
 * The functions are defined by the ck-jit-capi Rust crate. Link a C or C++
 * program against libck_jit_capi.a (or libck_jit_capi.so); C++ code linked
 * into a Rust program that depends on ck-jit-capi calls them directly.
 *
 * The manifest that says how to compile each blob is, in this order:
 *   1. the runtime a Rust caller registered (ck_jit_capi::register);
 *   2. the file named by CK_JIT_MANIFEST;
 *   3. $CK_JIT_ROOT/ck_jit_manifest.json.
 * Every other CK_JIT_* variable applies as for Rust callers.
 *
 * Errors: a failing call returns NULL, -1 or a failure count and leaves a
 * message for ck_jit_last_error(). No function aborts, throws or unwinds:
 * NULL pointers and non-UTF-8 names are errors, an internal failure is
 * caught and reported the same way, and a message that cannot be written
 * to stderr (a pipe whose reader is gone, in a process that ignores
 * SIGPIPE, as Python does) is lost without changing the result. The one
 * abort is the one asked for: a lazy stub aborts when ck_jit_stub_failed
 * returns 1 (CK_JIT_ON_FAILURE=abort). The C glue over CK's dispatchers
 * (ck-jit-ck) catches every C++ exception a dispatcher throws and returns
 * -1 with the message in ck_jit_last_error.
 *
 * Resolve once and keep the pointer; in C++ a function-local static does
 * it thread-safely:
 *
 *     using fwd_fn = float (*)(const ck_tile::stream_config&, fmha_fwd_args);
 *     static const auto fn = ck_jit::resolve<fwd_fn>("fmha_fwd_d128_bf16_batch");
 *     return fn(s, a);
 */
#ifndef CK_JIT_H
#define CK_JIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * An entry point as an untyped function pointer: cast it to the entry
 * point's real type before calling it.
 */
typedef void (*ck_jit_fn)(void);

/*
 * Compiles (unless a cached build is found) and loads `blob`, and returns
 * its entry point, or NULL on failure (unknown blob, compile error, ...;
 * see ck_jit_last_error). The first call of a blob may take as long as its
 * compile; other threads asking for the same blob wait for it.
 *
 * Safe from any thread. `blob` may be NULL (an error).
 */
ck_jit_fn ck_jit_resolve(const char* blob);

/*
 * As ck_jit_resolve, but returns the function `blob` exports under exactly
 * `symbol` instead of the manifest's entry symbol. NULL on failure (no
 * such symbol, among others), with the reason in ck_jit_last_error.
 */
ck_jit_fn ck_jit_resolve_symbol(const char* blob, const char* symbol);

/*
 * As ck_jit_resolve, but returns the first function `blob` exports whose
 * mangled name starts with `symbol_prefix` (for a blob that defines more
 * than its entry, such as CK's `_oneshot_` and `_get_name_` siblings:
 * "_Z25fmha_fwd_splitkv_oneshot_I"). NULL on failure, with the reason in
 * ck_jit_last_error.
 */
ck_jit_fn ck_jit_resolve_prefix(const char* blob, const char* symbol_prefix);

/*
 * As ck_jit_resolve_prefix ("" for the blob's own entry), with `blob`
 * looked up in the manifest at the path `manifest` rather than the
 * process-wide one: for a library that carries its own manifest (an FMHA
 * library whose dispatchers were made lazy at its link step). Each
 * manifest gets its own runtime, kept for the life of the process; a
 * failure to read it is not remembered, the next call tries again.
 */
ck_jit_fn ck_jit_resolve_with(const char* manifest, const char* blob, const char* symbol_prefix);

/*
 * Sets the cache directory, overriding CK_JIT_CACHE_DIR. Must come before
 * the first ck_jit_resolve or ck_jit_warmup of the process. The directory
 * is created (mode 0700) and checked now: one that is a symlink, owned by
 * another user or writable by group or others is refused, unless
 * CK_JIT_SHARED_CACHE=1 (never when writable by everyone).
 *
 * Returns 0 on success, -1 on failure (see ck_jit_last_error), which
 * includes a call after the first resolve and a runtime registered from
 * Rust (that keeps its own directory).
 */
int ck_jit_set_cache_dir(const char* dir);

/*
 * The message of the last failed ck_jit call on this thread, or NULL when
 * the last call succeeded. The string belongs to the library and stays
 * valid until the next ck_jit call on this thread; copy it to keep it.
 */
const char* ck_jit_last_error(void);

/*
 * Makes a copy of `message` this thread's last error, as ck_jit_last_error
 * returns it; NULL clears it. For C++ code between the caller and the
 * runtime, such as the C glue over CK's dispatchers, to report a failure
 * of its own (a caught exception) as ck-jit functions report theirs.
 */
void ck_jit_set_last_error(const char* message);

/*
 * Compiles and loads `n` blobs in parallel (at most CK_JIT_JOBS compiles
 * at once), ahead of their first use. Returns the number that failed;
 * their messages, one per line, are in ck_jit_last_error. NULL entries
 * count as failed; `blobs` may be NULL only when `n` is 0.
 */
int ck_jit_warmup(const char* const* blobs, size_t n);

/*
 * For lazy dispatchers' stubs (ck-jit-build writes them): a call of `blob`
 * that is always followed by another blob's call in the same operation
 * may wait for that blob's name, so both compile together with whatever
 * is certain to run with them. ck_jit_may_defer returns 1 when `blob`
 * would be compiled now and its recorded `together` sets disagree on its
 * companions (then the caller holds the call, and before the next blob's
 * call runs ck_jit_prepare_after(manifest, blob, next) and then the held
 * call); 0 to resolve it now, also on any error. ck_jit_prepare_after
 * returns 0, or -1 with the first failure in ck_jit_last_error. `manifest`
 * is NULL for the process's manifest, or a path as in ck_jit_resolve_with.
 */
int ck_jit_may_defer(const char* manifest, const char* blob);
int ck_jit_prepare_after(const char* manifest, const char* earlier, const char* blob);

/*
 * For lazy stubs whose blob cannot be had (the resolve returned NULL):
 * ck_jit_stub_failed counts a failure for this thread, says the reason
 * (ck_jit_last_error, kept) on stderr once per blob and process, and
 * returns 1 when the process is to abort (CK_JIT_ON_FAILURE=abort), else
 * 0: the stub then returns CK's "no kernel" value (a negative time from a
 * float entry). ck_jit_thread_failures is the count of such failures on
 * this thread since it started: compare it before and after a dispatcher
 * call to learn that a void launch inside it had no kernel.
 */
int ck_jit_stub_failed(const char* blob);
uint64_t ck_jit_thread_failures(void);

#ifdef __cplusplus
} /* extern "C" */

#include <stdexcept>
#include <string>

namespace ck_jit {

/*
 * ck_jit_resolve cast to the entry point type `F`; throws
 * std::runtime_error with ck_jit_last_error's message on failure.
 */
template <class F>
inline F resolve(const char* blob)
{
    ck_jit_fn fn = ck_jit_resolve(blob);
    if(fn == nullptr)
    {
        const char* why = ck_jit_last_error();
        throw std::runtime_error(why != nullptr ? std::string(why)
                                                : std::string("ck-jit: cannot resolve a blob"));
    }
    return reinterpret_cast<F>(fn);
}

} // namespace ck_jit
#endif /* __cplusplus */

#endif /* CK_JIT_H */
