//! The routes by which a command could make the person's next, unconfined git command
//! run a program, each as: the person's repository, the command's attack, the person's
//! git command afterwards. The program would create `PWNED` in the outside dir.
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use pocketpilot_sandbox::{confine, Restored, SandboxPolicy};

use super::{Ran, World};

/// Identity and no system config for every git run, confined or not.
pub const GIT_ENV: &str = "export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@e \
    GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@e GIT_CONFIG_NOSYSTEM=1 \
    GIT_CONFIG_GLOBAL=/dev/null;";

/// Writes `$WS/evil.sh`, which creates the marker when git runs it.
const EVIL: &str =
    "printf '#!/bin/sh\\ntouch \"%s/PWNED\"\\ncat >/dev/null 2>&1\\n' \"$OUT\" > \"$WS/evil.sh\"; \
    chmod +x \"$WS/evil.sh\";";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// `.git/commondir` pointed at a folder with a config of the command's.
    CommonDir,
    /// A nested repository's `vendor/lib/.git/config`.
    NestedConfig,
    /// A linked worktree whose `.git` file is replaced by `git init`.
    WorktreeGitFile,
    /// A submodule's config (in `.git/modules/sub`).
    Submodule,
    /// `.git/info/attributes` selecting a filter the person has configured.
    InfoAttributes,
    /// A repository the command creates, with a fsmonitor and a hook.
    NewRepo,
    /// A file in the workspace that the person's repository config includes.
    Included,
}

pub fn marker(w: &World) -> PathBuf {
    w.outside.join("PWNED")
}

/// `git ARGS` in `dir` as the person runs it: unconfined, with the fake home's config.
pub fn person_git(w: &World, dir: &Path, args: &[&str]) -> Output {
    std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("HOME", &w.home)
        .env("GIT_CONFIG_GLOBAL", w.home.join(".gitconfig"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "p")
        .env("GIT_AUTHOR_EMAIL", "p@e")
        .env("GIT_COMMITTER_NAME", "p")
        .env("GIT_COMMITTER_EMAIL", "p@e")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn ok(w: &World, dir: &Path, args: &[&str]) {
    let out = person_git(w, dir, args);
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn commit_one(w: &World, dir: &Path) {
    std::fs::write(dir.join("README"), "hello\n").unwrap();
    ok(w, dir, &["add", "README"]);
    ok(w, dir, &["commit", "-qm", "first"]);
}

/// The person's repositories before the call.
pub fn prepare(w: &World, route: Route) {
    std::fs::write(w.home.join(".gitconfig"), "").unwrap();
    let ws = &w.ws;
    match route {
        Route::Included => {
            ok(w, ws, &["init", "-q"]);
            commit_one(w, ws);
            std::fs::write(ws.join("shared.inc"), "[user]\n\tname = p\n").unwrap();
            ok(w, ws, &["config", "include.path", "../shared.inc"]);
        }
        Route::CommonDir | Route::NewRepo => {
            ok(w, ws, &["init", "-q"]);
            commit_one(w, ws);
        }
        Route::NestedConfig => {
            ok(w, ws, &["init", "-q"]);
            let lib = ws.join("vendor/lib");
            std::fs::create_dir_all(&lib).unwrap();
            ok(w, &lib, &["init", "-q"]);
            commit_one(w, &lib);
        }
        Route::WorktreeGitFile => {
            let main = ws.join("main");
            std::fs::create_dir_all(&main).unwrap();
            ok(w, &main, &["init", "-q"]);
            commit_one(w, &main);
            ok(w, &main, &["worktree", "add", "-q", "../wt"]);
            assert!(ws.join("wt/.git").is_file());
        }
        Route::Submodule => {
            let src = w.outside.join("subsrc");
            std::fs::create_dir_all(&src).unwrap();
            ok(w, &src, &["init", "-q"]);
            commit_one(w, &src);
            ok(w, ws, &["init", "-q"]);
            let src = src.to_string_lossy().into_owned();
            ok(
                w,
                ws,
                &[
                    "-c",
                    "protocol.file.allow=always",
                    "submodule",
                    "add",
                    "-q",
                    &src,
                    "sub",
                ],
            );
            assert!(ws.join("sub/.git").is_file());
        }
        Route::InfoAttributes => {
            // The person's own filter (as git-lfs installs one): harmless until an
            // attributes file selects it for their files.
            std::fs::write(
                w.home.join(".gitconfig"),
                format!(
                    "[filter \"pp\"]\n\tclean = \"touch '{}'; cat\"\n",
                    marker(w).display()
                ),
            )
            .unwrap();
            ok(w, ws, &["init", "-q"]);
            commit_one(w, ws);
        }
    }
}

/// What the command runs.
pub fn attack(route: Route) -> String {
    let body = match route {
        Route::CommonDir => {
            "mkdir -p evil/objects evil/refs; \
             printf '[core]\\n\\tfsmonitor = %s\\n' \"$WS/evil.sh\" > evil/config; \
             echo \"$WS/evil\" > .git/commondir"
        }
        Route::NestedConfig => {
            "printf '[core]\\n\\tfsmonitor = %s\\n' \"$WS/evil.sh\" >> vendor/lib/.git/config; \
             git -C vendor/lib config core.fsmonitor \"$WS/evil.sh\""
        }
        Route::WorktreeGitFile => {
            "cd wt && rm -f .git; mv .git .git-away; git init -q; \
             git config core.fsmonitor \"$WS/evil.sh\""
        }
        Route::Submodule => "git -C sub config core.fsmonitor \"$WS/evil.sh\"",
        Route::Included => "printf '[core]\\n\\tfsmonitor = %s\\n' \"$WS/evil.sh\" >> shared.inc",
        Route::InfoAttributes => "echo '* filter=pp' >> .git/info/attributes",
        Route::NewRepo => {
            "git init -q fresh && git -C fresh config core.fsmonitor \"$WS/evil.sh\" && \
             git -C fresh config alias.st status && \
             cp evil.sh fresh/.git/hooks/post-checkout"
        }
    };
    format!("{GIT_ENV} {EVIL} {body}; echo ATTACKED")
}

/// The person's git command after the call, in the repository the route aims at.
pub fn persons_turn(w: &World, route: Route) {
    let ws = &w.ws;
    let (dir, args): (PathBuf, &[&str]) = match route {
        Route::CommonDir | Route::Included => (ws.clone(), &["status"]),
        Route::NestedConfig => (ws.join("vendor/lib"), &["status"]),
        Route::WorktreeGitFile => (ws.join("wt"), &["status"]),
        Route::Submodule => (ws.join("sub"), &["status"]),
        Route::InfoAttributes => {
            std::fs::write(ws.join("new.txt"), "x\n").unwrap();
            (ws.clone(), &["add", "new.txt"])
        }
        Route::NewRepo => (ws.join("fresh"), &["status"]),
    };
    let _ = person_git(w, &dir, args);
    if route == Route::NewRepo && dir.join(".git/HEAD").exists() {
        let _ = person_git(w, &dir, &["checkout", "-q", "-b", "other"]);
    }
}

/// `sh -c SCRIPT` confined by `policy`; what the check after the call reported.
pub async fn sh_restored(policy: &SandboxPolicy, script: &str) -> (Ran, Vec<Restored>) {
    use std::os::unix::process::ExitStatusExt;
    let mut cmd = tokio::process::Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(format!("exec 2>&1\n{script}"))
        .current_dir(&policy.workspace)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut guard = confine(&mut cmd, policy).expect("confine");
    let output = cmd.output().await.expect("spawn");
    let restored = guard.restore_git_metadata();
    drop(guard);
    let ran = Ran {
        code: output.status.code(),
        signal: output.status.signal(),
        out: String::from_utf8_lossy(&output.stdout).into_owned(),
    };
    (ran, restored)
}

/// Runs `route` confined and then the person's git: no marker. The same attack without
/// the sandbox (`Mode::Off`) does leave it, so the check can fail.
pub async fn defused(route: Route) -> Vec<Restored> {
    let w = World::new();
    prepare(&w, route);
    let (ran, restored) = sh_restored(&w.policy(), &attack(route)).await;
    assert!(ran.out.contains("ATTACKED"), "{route:?}: {}", ran.out);
    persons_turn(&w, route);
    assert!(
        !marker(&w).exists(),
        "{route:?}: the person's git ran the command's program; restored {restored:#?}; {}",
        ran.out
    );

    let control = World::new();
    prepare(&control, route);
    let (ran, _) = sh_restored(&super::off(control.policy()), &attack(route)).await;
    assert!(ran.out.contains("ATTACKED"), "{route:?}: {}", ran.out);
    persons_turn(&control, route);
    assert!(
        marker(&control).exists(),
        "{route:?}: the attack does nothing even unconfined: {}",
        ran.out
    );
    restored
}

/// `git commit`, `git checkout -b` and `git stash` inside a confined command, in the
/// repository at the root and in a nested one.
pub async fn everyday_git_works(w: &World) {
    std::fs::write(w.home.join(".gitconfig"), "").unwrap();
    ok(w, &w.ws, &["init", "-q"]);
    commit_one(w, &w.ws);
    let lib = w.ws.join("vendor/lib");
    std::fs::create_dir_all(&lib).unwrap();
    ok(w, &lib, &["init", "-q"]);
    commit_one(w, &lib);
    let script = format!(
        "{GIT_ENV} set -e; for d in . vendor/lib; do (cd $d; \
         echo more >> README; git commit -qam second; \
         git checkout -q -b topic; echo wip >> README; git stash -q; \
         test \"$(cat README)\" = \"$(printf 'hello\\nmore')\"; git stash pop -q; \
         git commit -qam third; echo \"OK $d\"); done"
    );
    let (ran, restored) = sh_restored(&w.policy(), &script).await;
    assert!(
        ran.out.contains("OK .") && ran.out.contains("OK vendor/lib"),
        "{}",
        ran.out
    );
    assert!(restored.is_empty(), "{restored:#?}");
    for dir in [w.ws.clone(), lib] {
        let log = person_git(w, &dir, &["log", "--format=%s", "topic"]);
        assert_eq!(
            String::from_utf8_lossy(&log.stdout),
            "third\nsecond\nfirst\n"
        );
        let stash = person_git(w, &dir, &["stash", "list"]);
        assert!(stash.stdout.is_empty());
    }
}
