//! The layering the crates promise, checked against what cargo actually resolves: the core
//! compiles without a window toolkit, an HTTP server or a command-line parser, and the wire
//! types without a database or an async runtime.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use std::process::Command;

/// The names of every package in `package`'s normal (non-dev, non-build) dependency graph.
fn normal_dependencies(package: &str) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "-e",
            "normal",
            "--prefix",
            "none",
            "-p",
            package,
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect()
}

fn assert_free_of(package: &str, forbidden: &[&str]) {
    let deps = normal_dependencies(package);
    assert!(
        deps.len() > 5,
        "{package}: suspiciously few dependencies: {deps:?}"
    );
    let found: Vec<&String> = deps
        .iter()
        .filter(|d| {
            forbidden
                .iter()
                .any(|f| d.as_str() == *f || d.starts_with(&format!("{f}-")))
        })
        .collect();
    assert!(found.is_empty(), "{package} depends on {found:?}");
}

#[test]
fn core_has_neither_tauri_nor_an_http_server_nor_a_cli_parser() {
    assert_free_of("pocketpilot-core", &["tauri", "axum", "clap", "wry"]);
}

#[test]
fn the_protocol_has_no_database_async_runtime_or_toolkit() {
    let deps = normal_dependencies("pocketpilot-protocol");
    for forbidden in ["rusqlite", "tokio", "tauri", "specta"] {
        assert!(
            !deps.iter().any(|d| d == forbidden),
            "pocketpilot-protocol depends on {forbidden}: {deps:?}"
        );
    }
}

#[test]
fn the_store_knows_nothing_of_runs() {
    // tokio only for the writer's async hand-off (its `sync` primitives), never a run.
    assert_free_of(
        "pocketpilot-store",
        &[
            "tauri",
            "axum",
            "clap",
            "pocketpilot-core",
            "pocketpilot-model",
        ],
    );
}

/// A module of core: its path (`engine::worker`) and the source outside its unit tests.
struct Module {
    path: Vec<String>,
    code: String,
}

fn core_modules() -> Vec<Module> {
    fn walk(dir: &std::path::Path, prefix: &[String], out: &mut Vec<Module>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for path in entries {
            let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                let mut p = prefix.to_vec();
                p.push(stem);
                walk(&path, &p, out);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") || stem.ends_with("_tests") {
                continue;
            }
            let mut module = prefix.to_vec();
            if stem != "mod" && stem != "lib" {
                module.push(stem);
            }
            let text = std::fs::read_to_string(&path).unwrap();
            // Unit tests may reach anywhere.
            let code = text
                .split("#[cfg(test)]")
                .next()
                .unwrap_or_default()
                .to_owned();
            out.push(Module { path: module, code });
        }
    }
    let mut out = Vec::new();
    walk(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &[],
        &mut out,
    );
    out
}

/// Every path a module's code names through `crate::` or `super::`, with `use` groups
/// (`crate::{a::b, c}`) expanded, as absolute segment lists.
fn named_paths(module: &Module) -> Vec<Vec<String>> {
    fn path_chars(c: char) -> bool {
        c.is_ascii_alphanumeric()
            || c == '_'
            || c == ':'
            || c == '{'
            || c == '}'
            || c == ','
            || c == ' '
            || c == '\n'
    }
    /// `a::{b, c::d}` → [a::b, a::c::d]
    fn expand(text: &str) -> Vec<String> {
        let Some(open) = text.find('{') else {
            return vec![text.trim().trim_end_matches("::").to_owned()];
        };
        let head = text[..open].trim();
        let mut depth = 0;
        let mut parts = Vec::new();
        let mut cur = String::new();
        let mut end = text.len();
        for (i, c) in text[open + 1..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    end = open + 1 + i;
                    break;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    parts.push(std::mem::take(&mut cur));
                    continue;
                }
                _ => {}
            }
            cur.push(c);
        }
        let _ = end;
        parts.push(cur);
        parts
            .iter()
            .filter(|p| !p.trim().is_empty())
            .flat_map(|p| expand(p.trim()))
            .map(|p| format!("{head}{p}"))
            .collect()
    }
    let mut out = Vec::new();
    for (marker, base) in [
        ("crate::", Vec::new()),
        (
            "super::",
            module.path[..module.path.len().saturating_sub(1)].to_vec(),
        ),
    ] {
        for piece in module.code.split(marker).skip(1) {
            let taken: String = piece.chars().take_while(|c| path_chars(*c)).collect();
            // Only a group opened right away spans lines; else the path ends at a space.
            let opens_group = taken
                .find([' ', '\n', ',', '}', '{'])
                .is_some_and(|i| taken[i..].starts_with('{'));
            let taken = if opens_group {
                let mut depth = 0;
                let mut end = taken.len();
                for (i, c) in taken.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = i + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                taken[..end].to_owned()
            } else {
                taken
                    .split([' ', '\n', ',', '}', '{'])
                    .next()
                    .unwrap_or_default()
                    .to_owned()
            };
            for p in expand(&taken) {
                let mut segs = base.clone();
                segs.extend(
                    p.split("::")
                        .map(|s| s.trim().to_owned())
                        .filter(|s| !s.is_empty()),
                );
                out.push(segs);
            }
        }
    }
    out
}

/// The module of core a path names: the longest module path it starts with.
fn module_of(path: &[String], modules: &[Vec<String>]) -> Option<Vec<String>> {
    modules
        .iter()
        .filter(|m| !m.is_empty() && path.starts_with(m))
        .max_by_key(|m| m.len())
        .cloned()
}

/// api → engine → policy → the root's foundation modules: each may import its own layer
/// and the ones after it, never one before it.
fn layer(module: &[String]) -> (u8, &'static str) {
    match module.first().map(String::as_str) {
        Some("api") => (3, "api"),
        Some("engine") => (2, "engine"),
        Some("policy") => (1, "policy"),
        _ => (0, "the root"),
    }
}

fn import_graph() -> std::collections::BTreeMap<Vec<String>, std::collections::BTreeSet<Vec<String>>>
{
    let modules = core_modules();
    let paths: Vec<Vec<String>> = modules.iter().map(|m| m.path.clone()).collect();
    let mut graph = std::collections::BTreeMap::new();
    for m in &modules {
        if m.path.is_empty() {
            continue; // lib.rs declares and re-exports; it is not a layer
        }
        let named: std::collections::BTreeSet<Vec<String>> = named_paths(m)
            .iter()
            .filter_map(|p| module_of(p, &paths))
            .filter(|t| *t != m.path)
            .collect();
        graph.insert(m.path.clone(), named);
    }
    graph
}

#[test]
fn the_graph_reader_sees_groups_super_and_nested_modules() {
    let m = Module {
        path: vec!["engine".into(), "worker".into()],
        code: "use crate::{policy::cost::{self, Clock}, config};\nuse super::agent::Agent;\nlet x = crate::store::open();".into(),
    };
    let named: Vec<String> = named_paths(&m).iter().map(|p| p.join("::")).collect();
    for want in [
        "policy::cost::self",
        "policy::cost::Clock",
        "config",
        "engine::agent::Agent",
        "store::open",
    ] {
        assert!(named.iter().any(|n| n == want), "{want} not in {named:?}");
    }
}

/// The layers inside core a newcomer sees as folders, and their direction: api → engine →
/// policy → the root's modules (config, error kinds, logging). A line in `engine/` never
/// reaches into `api/`.
#[test]
fn core_imports_go_one_way_through_its_layers() {
    let graph = import_graph();
    assert!(
        graph.len() > 30,
        "core's modules not found: {:?}",
        graph.keys()
    );
    for layer_name in ["api", "engine", "policy"] {
        assert!(
            graph
                .keys()
                .any(|m| m.first().is_some_and(|f| f == layer_name)),
            "no module in core/src/{layer_name}"
        );
    }
    let mut upward = Vec::new();
    for (from, named) in &graph {
        for to in named {
            let (a, an) = layer(from);
            let (b, bn) = layer(to);
            if b > a {
                upward.push(format!(
                    "{} ({an}) imports {} ({bn})",
                    from.join("::"),
                    to.join("::")
                ));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports against the layers' direction:\n{}",
        upward.join("\n")
    );
}

/// No `impl Runtime` outside `api/`: the engine and the policies are not the API.
#[test]
fn runtime_is_implemented_in_api_only() {
    let outside: Vec<String> = core_modules()
        .into_iter()
        .filter(|m| m.path.first().is_none_or(|f| f != "api"))
        .filter(|m| {
            m.code.contains("impl Runtime {")
                || m.code.contains("impl crate::api::service::Runtime {")
        })
        .map(|m| m.path.join("::"))
        .collect();
    assert!(outside.is_empty(), "impl Runtime outside api/: {outside:?}");
}

/// No import circle among core's modules, however long: the strongly connected
/// components of the import graph are single modules.
#[test]
fn no_import_circle_among_core_modules() {
    let graph = import_graph();
    let cycles = strongly_connected(&graph)
        .into_iter()
        .filter(|c| c.len() > 1)
        .map(|c| {
            c.iter()
                .map(|m| m.join("::"))
                .collect::<Vec<_>>()
                .join(" → ")
        })
        .collect::<Vec<_>>();
    assert!(cycles.is_empty(), "import circles: {cycles:#?}");
}

#[test]
fn the_circle_finder_finds_a_long_circle() {
    let m = |s: &str| vec![s.to_owned()];
    let mut g = std::collections::BTreeMap::new();
    for (a, b) in [("a", "b"), ("b", "c"), ("c", "d"), ("d", "a"), ("e", "a")] {
        g.entry(m(a))
            .or_insert_with(std::collections::BTreeSet::new)
            .insert(m(b));
        g.entry(m(b))
            .or_insert_with(std::collections::BTreeSet::new);
    }
    let sccs = strongly_connected(&g);
    assert!(sccs.iter().any(|c| c.len() == 4), "{sccs:?}");
    assert!(sccs.iter().all(|c| !c.contains(&m("e")) || c.len() == 1));
}

/// Tarjan's algorithm over the import graph.
fn strongly_connected(
    graph: &std::collections::BTreeMap<Vec<String>, std::collections::BTreeSet<Vec<String>>>,
) -> Vec<Vec<Vec<String>>> {
    struct State<'a> {
        graph: &'a std::collections::BTreeMap<Vec<String>, std::collections::BTreeSet<Vec<String>>>,
        index: std::collections::BTreeMap<&'a Vec<String>, usize>,
        low: std::collections::BTreeMap<&'a Vec<String>, usize>,
        stack: Vec<&'a Vec<String>>,
        on_stack: std::collections::BTreeSet<&'a Vec<String>>,
        out: Vec<Vec<Vec<String>>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a Vec<String>) {
        let i = s.index.len();
        s.index.insert(v, i);
        s.low.insert(v, i);
        s.stack.push(v);
        s.on_stack.insert(v);
        if let Some(next) = s.graph.get(v) {
            for w in next {
                let Some((w, _)) = s.graph.get_key_value(w) else {
                    continue;
                };
                if !s.index.contains_key(w) {
                    visit(s, w);
                    let lw = s.low[w];
                    let lv = s.low[v];
                    s.low.insert(v, lv.min(lw));
                } else if s.on_stack.contains(w) {
                    let iw = s.index[w];
                    let lv = s.low[v];
                    s.low.insert(v, lv.min(iw));
                }
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                comp.push(w.clone());
                if w == v {
                    break;
                }
            }
            s.out.push(comp);
        }
    }
    let mut s = State {
        graph,
        index: Default::default(),
        low: Default::default(),
        stack: Vec::new(),
        on_stack: Default::default(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out
}

/// The bodies of a module's `impl Runtime { … }` blocks.
fn runtime_impls(code: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("\nimpl Runtime {") {
        let body = &rest[at + "\nimpl Runtime {".len()..];
        let mut depth = 1;
        let mut end = body.len();
        for (i, c) in body.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.push(&body[..end]);
        rest = &body[end..];
    }
    out
}

/// One command surface: outside core the runtime is opened, then reached only through
/// `Runtime::call` and the typed ops. Its other methods, its store and its recorder are
/// core's own; the test accessors exist only with the `testing` feature.
#[test]
fn the_runtime_has_one_entry_point() {
    let allowed = ["open", "open_with_config", "call"];
    let for_tests = ["store_for_tests", "recorder_for_tests"];
    let mut public = Vec::new();
    for m in core_modules() {
        for body in runtime_impls(&m.code) {
            let lines: Vec<&str> = body.lines().collect();
            for (i, line) in lines.iter().enumerate() {
                let Some(rest) = line
                    .strip_prefix("    pub fn ")
                    .or_else(|| line.strip_prefix("    pub async fn "))
                else {
                    continue;
                };
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                let gated = i > 0 && lines[i - 1].trim() == "#[cfg(feature = \"testing\")]";
                let ok = allowed.contains(&name.as_str())
                    || (for_tests.contains(&name.as_str()) && gated);
                if !ok {
                    public.push(format!("{}::{name}", m.path.join("::")));
                }
            }
        }
    }
    assert!(
        public.is_empty(),
        "public Runtime methods besides open and call: {public:?}"
    );
    let service = core_modules()
        .into_iter()
        .find(|m| m.path == ["api", "service"])
        .expect("api/service.rs");
    for field in ["pub store:", "pub recorder:", "pub feed:"] {
        assert!(
            !service.code.contains(field),
            "`{field}` on Runtime: the store and the recorder are core's"
        );
    }
}
