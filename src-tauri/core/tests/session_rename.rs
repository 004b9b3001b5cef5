//! A session renamed from the window keeps the title; an empty one is refused and loses
//! nothing (issue 20).
#![allow(clippy::unwrap_used, clippy::expect_used)]
use pocketpilot_protocol::ErrorKind;
use pocketpilot_test_support::Fixture;

#[tokio::test]
async fn a_session_is_renamed_and_an_empty_title_is_refused() {
    let f = Fixture::new();
    let script = f.script("hi.json", serde_json::json!([{ "text": "Hello." }]));
    let id = f.rt.create_task(&f.task("Say hello", &script)).unwrap();
    let session = f.rt.task(id).unwrap().session_id;

    let renamed = f.rt.rename_session(session, "  Greetings  ").unwrap();
    assert_eq!(renamed.title, "Greetings");
    assert_eq!(f.rt.session(session).unwrap().title, "Greetings");

    let empty = f.rt.rename_session(session, "   ").unwrap_err();
    assert_eq!(empty.kind(), ErrorKind::InvalidArguments);
    assert_eq!(f.rt.session(session).unwrap().title, "Greetings");

    let missing = f.rt.rename_session(session + 100, "x").unwrap_err();
    assert_eq!(missing.kind(), ErrorKind::NotFound);
}
