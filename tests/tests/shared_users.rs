//! One prebuild, many servers: a prebuild job as one Unix user fills a
//! shared cache (`CK_JIT_SHARED_CACHE=1`) with `ck-jit build`; a server as
//! another user of the same group loads every kernel from it offline,
//! compiling nothing; an object replaced behind the records' back is
//! refused, never loaded. The users are created here (needs root, which
//! CI is) and removed at the end.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use ck_jit_tests::{bin_path, c_manifest, ck_jit_tool, Tree};

struct Users {
    group: String,
    builder: String,
    server: String,
}

impl Users {
    fn create() -> Users {
        let id = std::process::id();
        let u = Users {
            group: format!("ckjg{id}"),
            builder: format!("ckjb{id}"),
            server: format!("ckjs{id}"),
        };
        run_root(Command::new("groupadd").arg(&u.group));
        for user in [&u.builder, &u.server] {
            run_root(
                Command::new("useradd")
                    .args(["-M", "-N", "-s", "/usr/sbin/nologin", "-g"])
                    .arg(&u.group)
                    .arg(user),
            );
        }
        u
    }

    /// `program args...` as `user`, in the shared group only, umask 002.
    fn run_as(&self, user: &str, program: &Path, args: &[&str], env: &[(&str, &Path)]) -> Output {
        let mut c = Command::new("setpriv");
        c.arg(format!("--reuid={user}"))
            .arg(format!("--regid={}", self.group))
            .arg("--clear-groups")
            .args(["sh", "-c", "umask 002; exec \"$@\"", "sh"])
            .arg(program)
            .args(args);
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("CK_JIT_") {
                c.env_remove(k);
            }
        }
        c.env("HOME", "/nonexistent")
            .env("CK_JIT_SHARED_CACHE", "1");
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().unwrap()
    }
}

impl Drop for Users {
    fn drop(&mut self) {
        for user in [&self.builder, &self.server] {
            let _ = Command::new("userdel").arg(user).status();
        }
        let _ = Command::new("groupdel").arg(&self.group).status();
    }
}

fn run_root(c: &mut Command) {
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{c:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

/// Copies an executable where every user can run it.
fn public_copy(from: &Path, dir: &Path) -> PathBuf {
    let to = dir.join(from.file_name().unwrap());
    fs::copy(from, &to).unwrap();
    fs::set_permissions(&to, fs::Permissions::from_mode(0o755)).unwrap();
    to
}

#[test]
fn a_prebuild_by_one_user_serves_another_offline_and_nothing_planted_loads() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        assert!(
            std::env::var_os("CK_JIT_REQUIRE_LAUNCHERS").is_none(),
            "this test creates Unix users and needs root (CK_JIT_REQUIRE_LAUNCHERS is set)"
        );
        eprintln!("skipping: creating Unix users needs root");
        return;
    }
    let t = Tree::new("two-users");
    let names = ["shared_a", "shared_b", "shared_c"];
    for (i, n) in names.iter().enumerate() {
        t.c_blob(n, i as i32 + 2, 1);
    }
    let manifest = t.write_manifest(&c_manifest(&t.dir, &names, "cc", &[]));
    for p in [&t.dir, &t.dir.join("kernels")] {
        fs::set_permissions(p, fs::Permissions::from_mode(0o755)).unwrap();
    }
    let bin = t.path("bin");
    fs::create_dir_all(&bin).unwrap();
    fs::set_permissions(&bin, fs::Permissions::from_mode(0o755)).unwrap();
    let tool = public_copy(&ck_jit_tool(), &bin);
    let probe = public_copy(&bin_path("ck-jit-probe"), &bin);

    let users = Users::create();
    // The shared root: the builder's, group-writable for the group,
    // new files inheriting the group (setgid).
    let cache = t.path("fleet-cache");
    fs::create_dir_all(&cache).unwrap();
    run_root(
        Command::new("chown")
            .arg(format!("{}:{}", users.builder, users.group))
            .arg(&cache),
    );
    fs::set_permissions(&cache, fs::Permissions::from_mode(0o2770)).unwrap();

    // The prebuild job.
    let manifest_arg = manifest.to_string_lossy().into_owned();
    let cache_arg = cache.to_string_lossy().into_owned();
    let out = users.run_as(
        &users.builder,
        &tool,
        &[
            "--manifest",
            &manifest_arg,
            "--cache-dir",
            &cache_arg,
            "build",
            "--all",
        ],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out));

    // The server: every kernel loaded offline, nothing compiled.
    for (i, n) in names.iter().enumerate() {
        let out = users.run_as(
            &users.server,
            &probe,
            &[&manifest_arg, &cache_arg, n, "5"],
            &[("CK_JIT_OFFLINE", Path::new("1"))],
        );
        let t = text(&out);
        assert!(out.status.success(), "{n}: {t}");
        assert!(t.contains(&format!("\"value\":{}", 5 * (i + 2) + 1)), "{t}");
        assert!(t.contains("\"compiles\":0"), "{t}");
    }

    // A group member replaces an object (the record left as it was): the
    // server refuses it, and never runs what was planted.
    let planted_src = t.write("planted.c", "int shared_b(int x) { return -12345; }\n");
    fs::set_permissions(&planted_src, fs::Permissions::from_mode(0o644)).unwrap();
    let object = fs::read_dir(cache.join("v1").join("shared_b"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .flat_map(|d| fs::read_dir(d.path()).unwrap().flatten())
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "so"))
        .expect("the prebuilt object of shared_b");
    let cc = Path::new("/bin/sh");
    let script = format!(
        "cc -shared -fPIC -o {o}.new {s} && mv -f {o}.new {o}",
        o = object.display(),
        s = planted_src.display()
    );
    let out = users.run_as(&users.builder, cc, &["-c", &script], &[]);
    assert!(out.status.success(), "{}", text(&out));
    let out = users.run_as(
        &users.server,
        &probe,
        &[&manifest_arg, &cache_arg, "shared_b", "5"],
        &[("CK_JIT_OFFLINE", Path::new("1"))],
    );
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(!t.contains("-12345"), "the planted object ran: {t}");
    assert!(t.contains("CK_JIT_OFFLINE"), "{t}");
}
