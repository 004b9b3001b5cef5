//! No function outside tests runs over [`MAX_LINES`] lines, counted from its `fn` line to
//! its closing brace (closures count towards the function holding them), unless a
//! `// long: <reason>` comment stands right above it or among its doc comments and
//! attributes. Every `.rs` file under `src-tauri/` is read, except `tests/` directories,
//! `tests.rs` and `*_tests.rs` files, and modules (inline or in their own file) under
//! `#[cfg(test)]`.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use syn::spanned::Spanned;
use syn::visit::{self, Visit};

const MAX_LINES: usize = 80;
const MARKER: &str = "// long:";

/// Functions over the limit that predate this check, in files whose owners are splitting
/// them: (file under the repository, name). A function listed here that gets short, or
/// goes, is reported so that its entry is removed; one not listed fails.
const NOT_YET_SPLIT: &[(&str, &str)] = &[];

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Long {
    file: String,
    line: usize,
    name: String,
    lines: usize,
}

impl std::fmt::Display for Long {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{} {} ({} lines)",
            self.file, self.line, self.name, self.lines
        )
    }
}

/// What one file holds: its long functions, and the files of its `#[cfg(test)] mod x;`.
#[derive(Default)]
struct Findings {
    long: Vec<Long>,
    test_modules: Vec<PathBuf>,
}

struct Finder<'a> {
    file: &'a Path,
    shown_as: &'a str,
    lines: Vec<&'a str>,
    /// The type or trait whose functions are being read.
    owner: Option<String>,
    found: Findings,
}

fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        let path = attr.path();
        if path.is_ident("test") || path.segments.last().is_some_and(|s| s.ident == "test") {
            return true;
        }
        let syn::Meta::List(list) = &attr.meta else {
            return false;
        };
        if !path.is_ident("cfg") {
            return false;
        }
        let words: Vec<String> = list
            .tokens
            .to_string()
            .split(|c: char| !c.is_alphanumeric() && c != '_')
            .map(str::to_owned)
            .collect();
        words.iter().any(|w| w == "test") && !words.iter().any(|w| w == "not")
    })
}

fn path_attr(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|attr| match &attr.meta {
        syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

impl Finder<'_> {
    /// Whether a `// long: <reason>` comment stands above the declaration starting at
    /// `first_line` (1-based), reading up through attributes and comments.
    fn marked(&self, first_line: usize, attrs: &[syn::Attribute]) -> bool {
        let attr_lines: BTreeSet<usize> = attrs
            .iter()
            .flat_map(|a| a.span().start().line..=a.span().end().line)
            .collect();
        let mut line = first_line;
        while line > 1 {
            line -= 1;
            let text = self.lines.get(line - 1).map_or("", |l| l.trim());
            if let Some(reason) = text.strip_prefix(MARKER) {
                if !reason.trim().is_empty() {
                    return true;
                }
            }
            if !(attr_lines.contains(&line) || text.starts_with("//")) {
                return false;
            }
        }
        false
    }

    fn measure(
        &mut self,
        attrs: &[syn::Attribute],
        vis: Option<&syn::Visibility>,
        sig: &syn::Signature,
        block: &syn::Block,
    ) {
        let start = vis
            .filter(|v| !matches!(v, syn::Visibility::Inherited))
            .map_or(sig.span().start().line, |v| v.span().start().line)
            .min(sig.span().start().line);
        let end = block.brace_token.span.close().start().line;
        let lines = end + 1 - start;
        if lines > MAX_LINES && !self.marked(start, attrs) {
            let name = match &self.owner {
                Some(owner) => format!("{owner}::{}", sig.ident),
                None => sig.ident.to_string(),
            };
            self.found.long.push(Long {
                file: self.shown_as.to_owned(),
                line: start,
                name,
                lines,
            });
        }
    }

    fn module_file(&self, module: &syn::ItemMod) -> Vec<PathBuf> {
        let dir = self.file.parent().unwrap_or(Path::new(""));
        if let Some(path) = path_attr(&module.attrs) {
            return vec![dir.join(path)];
        }
        let stem = self.file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let base = if matches!(stem, "mod" | "lib" | "main") {
            dir.to_path_buf()
        } else {
            dir.join(stem)
        };
        let name = module.ident.to_string();
        vec![
            base.join(format!("{name}.rs")),
            base.join(name).join("mod.rs"),
        ]
    }

    fn with_owner(&mut self, owner: Option<String>, read: impl FnOnce(&mut Self)) {
        let outer = std::mem::replace(&mut self.owner, owner);
        read(self);
        self.owner = outer;
    }
}

fn type_name(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        syn::Type::Reference(r) => type_name(&r.elem),
        _ => None,
    }
}

impl<'ast> Visit<'ast> for Finder<'_> {
    fn visit_item_mod(&mut self, module: &'ast syn::ItemMod) {
        if is_test_only(&module.attrs) {
            if module.content.is_none() {
                let files = self.module_file(module);
                self.found.test_modules.extend(files);
            }
            return;
        }
        visit::visit_item_mod(self, module);
    }

    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        if is_test_only(&item.attrs) {
            return;
        }
        self.measure(&item.attrs, Some(&item.vis), &item.sig, &item.block);
        // A function inside a function is measured on its own, with no owner.
        self.with_owner(None, |me| visit::visit_item_fn(me, item));
    }

    fn visit_item_impl(&mut self, item: &'ast syn::ItemImpl) {
        if is_test_only(&item.attrs) {
            return;
        }
        let owner = type_name(&item.self_ty);
        self.with_owner(owner, |me| visit::visit_item_impl(me, item));
    }

    fn visit_item_trait(&mut self, item: &'ast syn::ItemTrait) {
        if is_test_only(&item.attrs) {
            return;
        }
        let owner = Some(item.ident.to_string());
        self.with_owner(owner, |me| visit::visit_item_trait(me, item));
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        if is_test_only(&item.attrs) {
            return;
        }
        self.measure(&item.attrs, Some(&item.vis), &item.sig, &item.block);
        self.with_owner(None, |me| visit::visit_impl_item_fn(me, item));
    }

    fn visit_trait_item_fn(&mut self, item: &'ast syn::TraitItemFn) {
        if is_test_only(&item.attrs) {
            return;
        }
        if let Some(block) = &item.default {
            self.measure(&item.attrs, None, &item.sig, block);
        }
        self.with_owner(None, |me| visit::visit_trait_item_fn(me, item));
    }
}

/// The long functions of one file's source; `file` places its `#[cfg(test)] mod x;`
/// files, `shown_as` names it in the findings.
fn read_source(source: &str, file: &Path, shown_as: &str) -> Result<Findings, syn::Error> {
    let parsed = syn::parse_file(source)?;
    let mut finder = Finder {
        file,
        shown_as,
        lines: source.lines().collect(),
        owner: None,
        found: Findings::default(),
    };
    finder.visit_file(&parsed);
    Ok(finder.found)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if !matches!(name, "tests" | "target" | "node_modules") && !name.starts_with('.') {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") && name != "tests.rs" && !name.ends_with("_tests.rs") {
            out.push(path);
        }
    }
}

/// Every long, unmarked function under `src-tauri/`, by file and line.
fn long_functions_in_tree() -> Vec<Long> {
    let src_tauri = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the core crate sits in src-tauri/");
    let root = src_tauri
        .parent()
        .expect("src-tauri/ sits in the repository");
    let mut files = Vec::new();
    rust_files(src_tauri, &mut files);
    assert!(files.len() > 50, "too few sources found: {}", files.len());
    let mut long = Vec::new();
    let mut test_modules = BTreeSet::new();
    for file in &files {
        let source = std::fs::read_to_string(file)
            .unwrap_or_else(|e| panic!("read {}: {e}", file.display()));
        let shown_as = file
            .strip_prefix(root)
            .unwrap_or(file)
            .display()
            .to_string();
        let found = read_source(&source, file, &shown_as)
            .unwrap_or_else(|e| panic!("parse {shown_as}: {e}"));
        long.extend(found.long.into_iter().map(|l| (file.clone(), l)));
        test_modules.extend(found.test_modules);
    }
    let mut long: Vec<Long> = long
        .into_iter()
        .filter(|(file, _)| !test_modules.contains(file))
        .map(|(_, l)| l)
        .collect();
    long.sort();
    long
}

#[test]
fn no_function_outside_tests_is_over_80_lines_unless_it_says_why() {
    let long = long_functions_in_tree();
    let listed = |l: &Long| {
        NOT_YET_SPLIT
            .iter()
            .any(|(file, name)| l.file == *file && l.name == *name)
    };
    let new: Vec<String> = long
        .iter()
        .filter(|l| !listed(l))
        .map(Long::to_string)
        .collect();
    let gone: Vec<String> = NOT_YET_SPLIT
        .iter()
        .filter(|(file, name)| !long.iter().any(|l| l.file == *file && l.name == *name))
        .map(|(file, name)| format!("{file} {name}"))
        .collect();
    assert!(
        new.is_empty(),
        "functions over {MAX_LINES} lines: split them, or say why above them with `{MARKER} <reason>`:\n{}",
        new.join("\n")
    );
    assert!(
        gone.is_empty(),
        "no longer over {MAX_LINES} lines: remove from NOT_YET_SPLIT:\n{}",
        gone.join("\n")
    );
}

/// A function of `body_lines` lines between its `fn` line and its closing brace.
fn generated_fn(header: &str, name: &str, body_lines: usize) -> String {
    let mut text = format!("{header}fn {name}() {{\n");
    for n in 0..body_lines {
        text.push_str(&format!("    let _v{n} = {n};\n"));
    }
    text.push_str("}\n");
    text
}

#[test]
fn the_counter_catches_a_function_one_line_over_and_spares_marked_and_test_code() {
    let mut source = String::new();
    // Line 1: 81 lines in all.
    source.push_str(&generated_fn("", "too_long", 79));
    // 80 lines: at the limit.
    source.push_str(&generated_fn("", "at_the_limit", 78));
    source.push_str("/// Documented.\n// long: a table kept whole reads better.\n#[inline]\n");
    source.push_str(&generated_fn("", "marked", 100));
    source.push_str("// long:\n");
    source.push_str(&generated_fn("", "marked_without_reason", 100));
    let method_line = source.lines().count() + 3;
    source.push_str("struct S;\nimpl S {\n");
    source.push_str(&generated_fn("    pub ", "method", 90));
    source.push_str("}\n");
    source.push_str("#[cfg(test)]\nmod tests {\n");
    source.push_str(&generated_fn("", "in_tests", 200));
    source.push_str("}\n#[cfg(test)]\n#[path = \"x_tests.rs\"]\nmod x;\n");

    let found = read_source(&source, Path::new("/src/lib.rs"), "lib.rs").unwrap();
    let shown: Vec<String> = found.long.iter().map(Long::to_string).collect();
    let marked_without_reason_line = 1 + 81 + 80 + 3 + 102 + 1;
    assert_eq!(
        shown,
        vec![
            "lib.rs:1 too_long (81 lines)".to_owned(),
            format!("lib.rs:{marked_without_reason_line} marked_without_reason (102 lines)"),
            format!("lib.rs:{method_line} S::method (92 lines)"),
        ]
    );
    assert_eq!(found.test_modules, vec![PathBuf::from("/src/x_tests.rs")]);
}
