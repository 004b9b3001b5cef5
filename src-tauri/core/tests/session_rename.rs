//! A session renamed from the window keeps the title; an empty one is refused and loses
//! nothing (issue 20).
#![allow(clippy::unwrap_used, clippy::expect_used)]
use pocketpilot_core::ops;
use pocketpilot_protocol::ErrorKind;
use pocketpilot_test_support::Fixture;

#[tokio::test]
async fn a_session_is_renamed_and_an_empty_title_is_refused() {
    let f = Fixture::new();
    let script = f.script("hi.json", serde_json::json!([{ "text": "Hello." }]));
    let id =
        f.rt.call(ops::CreateTask {
            new: f.task("Say hello", &script),
        })
        .unwrap();
    let session = f.rt.call(ops::GetTask { id }).unwrap().session_id;

    let renamed =
        f.rt.call(ops::RenameSession {
            session_id: session,
            title: "  Greetings  ".into(),
        })
        .unwrap();
    assert_eq!(renamed.title, "Greetings");
    assert_eq!(
        f.rt.call(ops::GetSession {
            session_id: session
        })
        .unwrap()
        .title,
        "Greetings"
    );

    let empty =
        f.rt.call(ops::RenameSession {
            session_id: session,
            title: "   ".into(),
        })
        .unwrap_err();
    assert_eq!(empty.kind(), ErrorKind::InvalidArguments);
    assert_eq!(
        f.rt.call(ops::GetSession {
            session_id: session
        })
        .unwrap()
        .title,
        "Greetings"
    );

    let missing =
        f.rt.call(ops::RenameSession {
            session_id: session + 100,
            title: "x".into(),
        })
        .unwrap_err();
    assert_eq!(missing.kind(), ErrorKind::NotFound);
}
