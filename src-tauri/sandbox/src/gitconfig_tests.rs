use super::*;

fn names(text: &str) -> Vec<String> {
    parse(text.as_bytes())
        .unwrap()
        .iter()
        .map(Entry::name)
        .collect()
}

#[test]
fn sections_subsections_and_bare_keys() {
    let text = "# c\n[Core]\n\tBare = false\n\tfileMode\n[remote \"Origin\"]\n url = x ; c\n[Diff.Foo]\n textconv=cat\n";
    assert_eq!(
        names(text),
        [
            "core.bare",
            "core.filemode",
            "remote.Origin.url",
            "diff.foo.textconv"
        ]
    );
    let entries = parse(text.as_bytes()).unwrap();
    assert_eq!(entries[1].value, None);
    assert_eq!(entries[2].value.as_deref(), Some(&b"x"[..]));
}

#[test]
fn values_with_quotes_escapes_and_continuations() {
    let text = "[a]\n k = \"x ; y\" \\\n  z # c\n q = a\\tb\\\"\n";
    let e = parse(text.as_bytes()).unwrap();
    assert_eq!(e[0].value.as_deref(), Some(&b"x ; y   z"[..]));
    assert_eq!(e[1].value.as_deref(), Some(&b"a\tb\""[..]));
    assert_eq!(e.len(), 2);
}

#[test]
fn a_key_on_the_header_line_counts() {
    let text = "[core] fsmonitor = ./evil\n[x]y=1\n";
    assert_eq!(names(text), ["core.fsmonitor", "x.y"]);
    let e = parse(text.as_bytes()).unwrap();
    assert!(e[0].runs_program());
    let stripped = without(text.as_bytes(), &[&e[0]]);
    assert_eq!(names(std::str::from_utf8(&stripped).unwrap()), ["x.y"]);
}

#[test]
fn executable_keys_are_recognised() {
    let text = "[core]\nfsmonitor=a\nhooksPath=b\nsshCommand=c\npager=d\neditor=e\nbare=false\n\
                [filter \"lfs\"]\nclean=f\n[diff \"x\"]\ntextconv=g\n[diff]\ntool=vim\n\
                [credential]\nhelper=h\n[credential \"https://h\"]\nhelper=i\n\
                [include]\npath=j\n[includeIf \"gitdir:/x\"]\npath=k\n\
                [alias]\nst=status\nev=!sh\n[user]\nname=n\n";
    let e = parse(text.as_bytes()).unwrap();
    let running: Vec<String> = e
        .iter()
        .filter(|e| e.runs_program())
        .map(Entry::name)
        .collect();
    assert_eq!(
        running,
        [
            "core.fsmonitor",
            "core.hookspath",
            "core.sshcommand",
            "core.pager",
            "core.editor",
            "filter.lfs.clean",
            "diff.x.textconv",
            "credential.helper",
            "credential.https://h.helper",
            "include.path",
            "includeif.gitdir:/x.path",
            "alias.ev"
        ]
    );
}

#[test]
fn what_git_would_refuse_is_refused() {
    for bad in [
        "k = v\n",
        "[core\nk=v\n",
        "[a \"b]\n",
        "[a]\nk = \"open\n",
        "[a]\n1k = v\n",
        "[a]\nk v\n",
        "[a]\nk = \\q\n",
        "[a]\nk = v\0\n",
    ] {
        assert!(parse(bad.as_bytes()).is_err(), "{bad:?}");
    }
}
