//! Keychain round trip through the Secret Service.
//!
//! Needs a D-Bus session with an unlocked Secret Service. The project's test script runs
//! the suite like this (isolated XDG dirs, so no login keyring is made in the real home):
//! ```text
//! T=$(mktemp -d); mkdir -p $T/run; chmod 700 $T/run
//! export XDG_DATA_HOME=$T/data XDG_CACHE_HOME=$T/cache XDG_RUNTIME_DIR=$T/run
//! keyctl session - dbus-run-session -- bash -c \
//!   'echo -n test-pw | gnome-keyring-daemon --unlock --components=secrets >/dev/null && cargo test ...'
//! ```
//! Without such a session the round trip is skipped with a note, except when `CI` is set:
//! then it fails, saying what is missing.
#![allow(clippy::unwrap_used, clippy::expect_used)]
use pocketpilot_model::keychain::{self, KeychainError};

fn unavailable(e: &KeychainError) {
    let message = format!(
        "no Secret Service reachable ({e}); run the tests inside `keyctl session - dbus-run-session` \
         with gnome-keyring-daemon unlocked (see the top of tests/suite/keychain.rs)"
    );
    if std::env::var_os("CI").is_some() {
        panic!("{message}");
    }
    eprintln!("skipping the keychain round trip: {message}");
}

#[test]
fn keychain_round_trip() {
    let provider = format!("pocketpilot-test-{}", std::process::id());
    let secret = "sk-roundtrip-Ünïcode-123";
    match keychain::set_key(&provider, secret) {
        Ok(()) => {}
        Err(e @ KeychainError::Unavailable(_)) => return unavailable(&e),
        Err(e) => panic!("set_key: {e}"),
    }
    assert_eq!(
        keychain::get_key(&provider).unwrap().as_deref(),
        Some(secret)
    );
    keychain::set_key(&provider, "sk-replaced").unwrap();
    assert_eq!(
        keychain::get_key(&provider).unwrap().as_deref(),
        Some("sk-replaced")
    );
    assert!(keychain::delete_key(&provider).unwrap());
    assert_eq!(keychain::get_key(&provider).unwrap(), None);
    assert!(
        !keychain::delete_key(&provider).unwrap(),
        "deleting twice is not an error"
    );
}

#[test]
fn the_environment_overrides_the_keychain() {
    let never = || -> Result<Option<String>, KeychainError> { panic!("keychain asked") };
    assert_eq!(
        keychain::resolve_with(Some(" sk-env ".into()), never)
            .unwrap()
            .as_deref(),
        Some("sk-env")
    );
    let from_keychain = || Ok(Some("sk-kc".to_string()));
    assert_eq!(
        keychain::resolve_with(Some("".into()), from_keychain)
            .unwrap()
            .as_deref(),
        Some("sk-kc")
    );
    assert_eq!(keychain::resolve_with(None, || Ok(None)).unwrap(), None);
    assert!(matches!(
        keychain::get_key(""),
        Err(KeychainError::InvalidName(_))
    ));
}
