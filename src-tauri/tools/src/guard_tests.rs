use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use super::*;
use crate::sandbox::Sandbox;

/// A workspace with every kind of entry the cases need, beside an `outside` directory.
struct World {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
    guard: WorkspaceGuard,
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o644) };
    assert_eq!(rc, 0, "mkfifo failed");
}

fn world() -> World {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let root = base.join("ws");
    let outside = base.join("outside");
    std::fs::create_dir_all(root.join("dir/sub")).unwrap();
    std::fs::create_dir_all(root.join("data")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(root.join("a.txt"), "a").unwrap();
    std::fs::write(root.join("dir/b.txt"), "b").unwrap();
    std::fs::write(root.join("dir/sub/c.txt"), "c").unwrap();
    std::fs::write(root.join("data/db.sqlite"), "db").unwrap();
    std::fs::write(root.join("ünïcödé.txt"), "u").unwrap();
    std::fs::write(root.join("with space.txt"), "s").unwrap();
    std::fs::write(outside.join("secret.txt"), "secret").unwrap();
    symlink("dir", root.join("link_in")).unwrap();
    symlink("dir/sub", root.join("link_deep")).unwrap();
    symlink("dir/b.txt", root.join("link_file")).unwrap();
    symlink("../outside", root.join("link_out")).unwrap();
    symlink("../outside/secret.txt", root.join("link_out_file")).unwrap();
    symlink(root.join("dir"), root.join("link_abs_in")).unwrap();
    symlink("nowhere", root.join("dangling")).unwrap();
    symlink("loop_b", root.join("loop_a")).unwrap();
    symlink("loop_a", root.join("loop_b")).unwrap();
    symlink("/dev/null", root.join("dev_null")).unwrap();
    symlink("data", root.join("link_data")).unwrap();
    mkfifo(&root.join("fifo"));
    let guard = WorkspaceGuard::new(&root, &[root.join("data")]).unwrap();
    World {
        _tmp: tmp,
        root,
        outside,
        guard,
    }
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Existing,
    File,
    Dir,
    Write,
    Entry,
}

enum Want {
    /// The resolved path, relative to the root.
    Ok(&'static str),
    Err(&'static str),
}

struct Case {
    name: &'static str,
    op: Op,
    input: String,
    want: Want,
}

fn case(name: &'static str, op: Op, input: impl Into<String>, want: Want) -> Case {
    Case {
        name,
        op,
        input: input.into(),
        want,
    }
}

fn run(w: &World, op: Op, input: &str) -> Result<PathBuf, GuardError> {
    match op {
        Op::Existing => w.guard.resolve_existing(input),
        Op::File => w.guard.resolve_file(input),
        Op::Dir => w.guard.resolve_dir(input),
        Op::Write => w.guard.resolve_for_write(input),
        Op::Entry => w.guard.resolve_entry(input),
    }
}

#[test]
fn guard_table() {
    use Op::*;
    use Want::{Err as E, Ok as O};
    let w = world();
    let root = w.root.display().to_string();
    let deep_ok = "d234567890/".repeat(40) + "f.txt";
    let cases = vec![
        case("plain file", File, "a.txt", O("a.txt")),
        case("nested file", File, "dir/sub/c.txt", O("dir/sub/c.txt")),
        case("dot is the root for list", Dir, ".", O(".")),
        case("dot slash prefix", File, "./a.txt", O("a.txt")),
        case("double slash", File, "dir//b.txt", O("dir/b.txt")),
        case("trailing slash on a dir", Dir, "dir/", O("dir")),
        case(
            "trailing slash on a file",
            Existing,
            "a.txt/",
            E("not_a_directory"),
        ),
        case(
            "trailing slash on a write",
            Write,
            "newdir/",
            E("not_regular_file"),
        ),
        case("empty path", Existing, "", E("empty")),
        case("NUL byte", Existing, "a\0.txt", E("nul_byte")),
        case(
            "NUL byte at the end of a write",
            Write,
            "new.txt\0",
            E("nul_byte"),
        ),
        case("tilde alone", Dir, "~", E("home_relative")),
        case("tilde slash", Existing, "~/.bashrc", E("home_relative")),
        case("tilde user", Existing, "~root/.bashrc", E("home_relative")),
        case(
            "tilde not first is a plain name",
            Write,
            "./~notes.txt",
            O("~notes.txt"),
        ),
        case("absolute inside", File, format!("{root}/a.txt"), O("a.txt")),
        case("absolute root", Dir, root.clone(), O(".")),
        case(
            "absolute outside",
            File,
            "/etc/passwd",
            E("outside_workspace"),
        ),
        case(
            "absolute outside write",
            Write,
            "/tmp/pp-new.txt",
            E("outside_workspace"),
        ),
        case(
            "absolute with dotdot out",
            File,
            format!("{root}/../outside/secret.txt"),
            E("parent_escape"),
        ),
        case(
            "absolute through a link out",
            File,
            format!("{root}/link_out/secret.txt"),
            E("symlink_escape"),
        ),
        case(
            "dotdot escape",
            File,
            "../outside/secret.txt",
            E("parent_escape"),
        ),
        case(
            "dotdot out and back in",
            File,
            "../ws/a.txt",
            E("parent_escape"),
        ),
        case(
            "dotdot deep escape",
            Existing,
            "dir/sub/../../../x",
            E("parent_escape"),
        ),
        case("dotdot that stays inside", File, "dir/../a.txt", O("a.txt")),
        case(
            "symlink to a dir inside",
            File,
            "link_in/b.txt",
            O("dir/b.txt"),
        ),
        case(
            "absolute symlink inside",
            File,
            "link_abs_in/b.txt",
            O("dir/b.txt"),
        ),
        case(
            "symlink to a file inside",
            File,
            "link_file",
            O("dir/b.txt"),
        ),
        case(
            "symlink in the middle leads out",
            File,
            "link_out/secret.txt",
            E("symlink_escape"),
        ),
        case(
            "symlink to a file outside",
            File,
            "link_out_file",
            E("symlink_escape"),
        ),
        case(
            "dotdot after a symlink uses the real parent",
            File,
            "link_deep/../b.txt",
            O("dir/b.txt"),
        ),
        case(
            "dotdot after a symlink out",
            File,
            "link_out/../ws/a.txt",
            E("symlink_escape"),
        ),
        case(
            "dangling symlink read",
            Existing,
            "dangling",
            E("dangling_symlink"),
        ),
        case(
            "dangling symlink write",
            Write,
            "dangling",
            E("dangling_symlink"),
        ),
        case("symlink loop", Existing, "loop_a", E("io")),
        case("device via symlink", File, "dev_null", E("symlink_escape")),
        case("device absolute", File, "/dev/null", E("outside_workspace")),
        case("fifo read", File, "fifo", E("not_regular_file")),
        case("fifo write", Write, "fifo", E("not_regular_file")),
        case("directory read as file", File, "dir", E("not_regular_file")),
        case(
            "directory as write target",
            Write,
            "dir",
            E("not_regular_file"),
        ),
        case("file listed as dir", Dir, "a.txt", E("not_a_directory")),
        case("data dir file", File, "data/db.sqlite", E("forbidden")),
        case("data dir itself", Dir, "data", E("forbidden")),
        case(
            "data dir through a symlink",
            File,
            "link_data/db.sqlite",
            E("forbidden"),
        ),
        case(
            "data dir through dotdot",
            File,
            "dir/../data/db.sqlite",
            E("forbidden"),
        ),
        case(
            "new file in the data dir",
            Write,
            "data/new.txt",
            E("forbidden"),
        ),
        case(
            "path longer than PATH_MAX",
            Write,
            "a/".repeat(2100) + "f",
            E("too_long"),
        ),
        case(
            "name longer than NAME_MAX",
            Write,
            "x".repeat(256),
            E("too_long"),
        ),
        case("long but legal new path", Write, deep_ok, O_DEEP),
        case("unicode name", File, "ünïcödé.txt", O("ünïcödé.txt")),
        case(
            "name with a space",
            File,
            "with space.txt",
            O("with space.txt"),
        ),
        case(
            "new file in new dirs",
            Write,
            "new/a/b.txt",
            O("new/a/b.txt"),
        ),
        case(
            "new file through a symlink inside",
            Write,
            "link_in/new.txt",
            O("dir/new.txt"),
        ),
        case(
            "new file through a symlink out",
            Write,
            "link_out/new.txt",
            E("symlink_escape"),
        ),
        case(
            "overwrite through a symlink out",
            Write,
            "link_out_file",
            E("symlink_escape"),
        ),
        case(
            "dotdot after a missing dir",
            Write,
            "missing/../a.txt",
            E("parent_of_missing"),
        ),
        case("write on the root", Write, ".", E("is_root")),
        case("file under a file", Write, "a.txt/x", E("not_a_directory")),
        case(
            "entry keeps a link out (delete the link)",
            Entry,
            "link_out",
            O("link_out"),
        ),
        case(
            "entry through a link out",
            Entry,
            "link_out/secret.txt",
            E("symlink_escape"),
        ),
        case("entry on the root", Entry, ".", E("is_root")),
        case("entry missing", Entry, "missing.txt", E("not_found")),
        case("existing missing", Existing, "missing.txt", E("not_found")),
    ];
    assert!(cases.len() >= 40);
    let mut failures = Vec::new();
    for c in &cases {
        let got = run(&w, c.op, &c.input);
        let ok = match (&c.want, &got) {
            (Want::Ok(rel), Ok(path)) => {
                let expected = if *rel == "." {
                    w.root.clone()
                } else if *rel == "@deep" {
                    w.root.join("d234567890/".repeat(40) + "f.txt")
                } else {
                    w.root.join(rel)
                };
                *path == expected
            }
            (Want::Err(kind), Err(err)) => err.kind() == *kind,
            _ => false,
        };
        if !ok {
            failures.push(format!(
                "{} ({:?} {:?}): got {:?}",
                c.name, c.op, c.input, got
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failing cases:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        std::fs::read_to_string(w.outside.join("secret.txt")).unwrap() == "secret",
        "resolution never writes"
    );
}

const O_DEEP: Want = Want::Ok("@deep");

#[test]
fn messages_are_clear() {
    let w = world();
    let err = w.guard.resolve_file("../outside/secret.txt").unwrap_err();
    assert_eq!(
        err.to_string(),
        "../outside/secret.txt: `..` leads out of the workspace"
    );
    let err = w.guard.resolve_file("link_out_file").unwrap_err();
    assert!(err.to_string().contains("symbolic link leads out"), "{err}");
    let tool_err: ToolError = err.into();
    assert_eq!(tool_err.kind().as_str(), "path_rejected");
    let missing: ToolError = w.guard.resolve_file("nope").unwrap_err().into();
    assert_eq!(missing.kind().as_str(), "failed");
}

#[test]
fn root_equal_to_a_forbidden_dir_is_refused() {
    let w = world();
    let err = WorkspaceGuard::new(&w.root, std::slice::from_ref(&w.root)).unwrap_err();
    assert_eq!(err.kind(), "forbidden");
}

#[test]
fn forbidden_dir_above_the_root_does_not_block_the_workspace() {
    let w = world();
    let parent = w.root.parent().unwrap().to_path_buf();
    let guard = WorkspaceGuard::new(&w.root, &[parent]).unwrap();
    assert!(guard.resolve_file("a.txt").is_ok());
}

#[test]
fn missing_root_is_a_bad_root() {
    let w = world();
    let err = WorkspaceGuard::new(w.root.join("nope"), &[]).unwrap_err();
    assert_eq!(err.kind(), "bad_root");
}

#[test]
fn non_canonical_root_is_canonicalised() {
    let w = world();
    let guard = WorkspaceGuard::new(w.root.join("dir/.."), &[]).unwrap();
    assert_eq!(guard.root(), w.root.as_path());
}

#[test]
fn contains_forbidden_covers_parents_of_the_data_dir() {
    let w = world();
    assert!(w.guard.contains_forbidden(&w.root.join("data")));
    assert!(!w.guard.contains_forbidden(&w.root.join("dir")));
}

#[test]
fn toctou_dir_swapped_for_a_link_out_after_the_check_cannot_receive_the_write() {
    let w = world();
    std::fs::create_dir(w.root.join("swap")).unwrap();
    let checked = w.guard.resolve_for_write("swap/new.txt").unwrap();
    // The attacker swaps the checked directory for a link to outside.
    std::fs::remove_dir(w.root.join("swap")).unwrap();
    symlink(&w.outside, w.root.join("swap")).unwrap();
    let sandbox = Sandbox::open(&w.guard).unwrap();
    let err = sandbox.write_atomic(&checked, b"pwned").unwrap_err();
    assert!(
        matches!(err.kind(), "symlink_escape" | "changed"),
        "unexpected {err:?}"
    );
    assert!(
        !w.outside.join("new.txt").exists(),
        "nothing may land outside"
    );
    // And a fresh check, as the tools do at execution time, refuses outright.
    assert_eq!(
        w.guard
            .resolve_for_write("swap/new.txt")
            .unwrap_err()
            .kind(),
        "symlink_escape"
    );
}

#[test]
fn toctou_final_link_swapped_in_after_the_check_is_not_followed() {
    let w = world();
    let checked = w.guard.resolve_for_write("target.txt").unwrap();
    symlink(w.outside.join("secret.txt"), w.root.join("target.txt")).unwrap();
    let sandbox = Sandbox::open(&w.guard).unwrap();
    // Refusing is the expected outcome; replacing the link itself would also be safe.
    let result = sandbox.write_atomic(&checked, b"inside");
    assert_eq!(
        std::fs::read_to_string(w.outside.join("secret.txt")).unwrap(),
        "secret"
    );
    if let Err(err) = result {
        assert_eq!(err.kind(), "not_regular_file", "{err:?}");
    } else {
        assert!(std::fs::symlink_metadata(w.root.join("target.txt"))
            .unwrap()
            .is_file());
    }
}

#[test]
fn toctou_file_swapped_for_a_link_out_cannot_be_read() {
    let w = world();
    let checked = w.guard.resolve_file("a.txt").unwrap();
    std::fs::remove_file(w.root.join("a.txt")).unwrap();
    symlink(w.outside.join("secret.txt"), w.root.join("a.txt")).unwrap();
    let sandbox = Sandbox::open(&w.guard).unwrap();
    let err = sandbox.read_head(&checked, 1024).unwrap_err();
    assert_eq!(err.kind(), "changed", "{err:?}");
}

#[test]
fn toctou_parent_swapped_for_another_dir_inside_is_detected() {
    let w = world();
    std::fs::create_dir(w.root.join("p")).unwrap();
    std::fs::write(w.root.join("p/f.txt"), "p").unwrap();
    let checked = w.guard.resolve_file("p/f.txt").unwrap();
    std::fs::rename(w.root.join("p"), w.root.join("p_old")).unwrap();
    symlink("dir", w.root.join("p")).unwrap();
    std::fs::write(w.root.join("dir/f.txt"), "other").unwrap();
    let sandbox = Sandbox::open(&w.guard).unwrap();
    let err = sandbox.read_head(&checked, 1024).unwrap_err();
    assert_eq!(err.kind(), "changed", "{err:?}");
}

#[test]
fn hard_link_to_an_outside_file_is_replaced_not_written_through() {
    let w = world();
    let outside_file = w.outside.join("hard.txt");
    std::fs::write(&outside_file, "original").unwrap();
    if std::fs::hard_link(&outside_file, w.root.join("hard.txt")).is_err() {
        return; // a different filesystem: no hard links possible
    }
    let checked = w.guard.resolve_for_write("hard.txt").unwrap();
    Sandbox::open(&w.guard)
        .unwrap()
        .write_atomic(&checked, b"new")
        .unwrap();
    assert_eq!(std::fs::read_to_string(&outside_file).unwrap(), "original");
    assert_eq!(
        std::fs::read_to_string(w.root.join("hard.txt")).unwrap(),
        "new"
    );
}

#[test]
fn fifo_swapped_in_does_not_hang_a_read() {
    let w = world();
    std::fs::write(w.root.join("f.txt"), "x").unwrap();
    let checked = w.guard.resolve_file("f.txt").unwrap();
    std::fs::remove_file(w.root.join("f.txt")).unwrap();
    mkfifo(&w.root.join("f.txt"));
    let err = Sandbox::open(&w.guard)
        .unwrap()
        .read_head(&checked, 10)
        .unwrap_err();
    assert_eq!(err.kind(), "not_regular_file", "{err:?}");
}

#[test]
fn non_utf8_names_are_listed_lossily() {
    let w = world();
    let name = OsStr::from_bytes(b"bad\xffname.txt");
    std::fs::write(w.root.join("dir").join(name), "x").unwrap();
    let entries = Sandbox::open(&w.guard)
        .unwrap()
        .read_dir(&w.root.join("dir"))
        .unwrap();
    assert!(entries.iter().any(|e| e.name == name));
    assert_eq!(
        w.guard.relative(&w.root.join("dir").join(name)),
        "dir/bad\u{fffd}name.txt"
    );
}

#[test]
fn device_node_inside_the_workspace_is_not_a_regular_file() {
    let w = world();
    let path = w.root.join("null_dev");
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid path; makedev(1, 3) is /dev/null's device number.
    let rc = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) };
    if rc != 0 {
        return; // no CAP_MKNOD here; the FIFO cases cover non-regular files
    }
    assert_eq!(
        w.guard.resolve_file("null_dev").unwrap_err().kind(),
        "not_regular_file"
    );
    assert_eq!(
        w.guard.resolve_for_write("null_dev").unwrap_err().kind(),
        "not_regular_file"
    );
}

#[test]
fn the_pocketpilot_folder_is_read_only_also_through_a_link_and_a_parent() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("conf")).unwrap();
    std::fs::write(root.join("conf/policy.json"), "{}").unwrap();
    symlink("conf", root.join(".pocketpilot")).unwrap();
    let g = WorkspaceGuard::new(root, &[]).unwrap();
    for raw in [
        ".pocketpilot/policy.json",
        "conf/policy.json",
        "conf/new.txt",
    ] {
        let err = g.resolve_for_write(raw).unwrap_err();
        assert_eq!(err.kind(), "read_only", "{raw}: {err}");
    }
    assert_eq!(g.resolve_entry("conf").unwrap_err().kind(), "read_only");
    // Reading stays allowed, and the rest of the workspace is writable.
    assert!(g.resolve_file(".pocketpilot/policy.json").is_ok());
    assert!(g.resolve_for_write("notes.txt").is_ok());
}
