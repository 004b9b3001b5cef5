use std::path::PathBuf;

use super::*;

#[test]
fn a_spec_reads_back_as_the_text_it_was_written_from() {
    for text in [
        "scripted:/tmp/turns.json",
        "scripted:rel/dir/t.json",
        "settings",
    ] {
        let spec: ProviderSpec = text.parse().unwrap();
        assert_eq!(spec.to_string(), text);
        assert_eq!(spec.to_string().parse::<ProviderSpec>().unwrap(), spec);
    }
    assert_eq!(
        "scripted:/a b/c.json".parse::<ProviderSpec>().unwrap(),
        ProviderSpec::Scripted(PathBuf::from("/a b/c.json"))
    );
}

#[test]
fn the_configured_model_is_the_absent_the_empty_and_the_settings_spec() {
    assert_eq!(
        ProviderSpec::from_stored(None).unwrap(),
        ProviderSpec::Configured
    );
    assert_eq!(
        "".parse::<ProviderSpec>().unwrap(),
        ProviderSpec::Configured
    );
    assert_eq!(
        "settings".parse::<ProviderSpec>().unwrap(),
        ProviderSpec::Configured
    );
    assert_eq!(ProviderSpec::Configured.to_stored(), None);
    let scripted = ProviderSpec::from_stored(Some("scripted:/s.json")).unwrap();
    assert_eq!(scripted.to_stored().as_deref(), Some("scripted:/s.json"));
    assert_eq!(scripted.script(), Some(std::path::Path::new("/s.json")));
}

#[test]
fn an_unknown_spec_is_refused_with_what_to_write_instead() {
    let err = "openai:gpt-4o".parse::<ProviderSpec>().unwrap_err();
    assert_eq!(err, UnknownProvider("openai:gpt-4o".into()));
    assert_eq!(
        err.to_string(),
        "unknown provider `openai:gpt-4o`: use `scripted:FILE`, or leave it out to use the configured model"
    );
    // A prefix is not enough: the colon is part of it.
    assert!("scripted".parse::<ProviderSpec>().is_err());
    assert!(ProviderSpec::from_stored(Some("Scripted:/x")).is_err());
}

#[test]
fn serde_carries_the_spec_as_its_text() {
    let spec = ProviderSpec::Scripted(PathBuf::from("/w/s.json"));
    let json = serde_json::to_string(&spec).unwrap();
    assert_eq!(json, r#""scripted:/w/s.json""#);
    assert_eq!(serde_json::from_str::<ProviderSpec>(&json).unwrap(), spec);
    let err = serde_json::from_str::<ProviderSpec>(r#""bogus""#).unwrap_err();
    assert!(
        err.to_string().contains("unknown provider `bogus`"),
        "{err}"
    );
}

#[test]
fn a_relative_script_is_made_absolute_against_the_current_directory() {
    let spec = ProviderSpec::Scripted(PathBuf::from("turns.json")).absolute();
    let cwd = std::env::current_dir().unwrap();
    assert_eq!(spec, ProviderSpec::Scripted(cwd.join("turns.json")));
    assert_eq!(
        ProviderSpec::Configured.absolute(),
        ProviderSpec::Configured
    );
}
