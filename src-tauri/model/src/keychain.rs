//! API keys in the OS keychain (service `pocketpilot`, account = provider name).
//!
//! On Linux this is the Secret Service (GNOME Keyring, KWallet) when a D-Bus session
//! offers one, the kernel keyutils otherwise. Keys are written and read here and nowhere
//! else; no error of this module carries a key's text. `POCKETPILOT_API_KEY` overrides
//! the keychain for headless runs (CI, servers, containers).
use keyring::Entry;

/// The keychain service every PocketPilot secret is filed under.
pub const SERVICE: &str = "pocketpilot";

/// The environment variable that, when set and not empty, is used instead of the keychain.
pub const ENV_API_KEY: &str = "POCKETPILOT_API_KEY";

#[derive(Debug, thiserror::Error)]
pub enum KeychainError {
    /// No keychain could be reached (no Secret Service on the session bus, a locked
    /// store, ...). `POCKETPILOT_API_KEY` is the way around it.
    #[error("the OS keychain is not available: {0}. Set POCKETPILOT_API_KEY instead")]
    Unavailable(String),
    #[error("the provider name `{0}` cannot be used as a keychain account")]
    InvalidName(String),
    #[error("the keychain entry for `{0}` is not text")]
    NotText(String),
    #[error("the keychain failed: {0}")]
    Backend(String),
}

fn entry(provider: &str) -> Result<Entry, KeychainError> {
    if provider.trim().is_empty() {
        return Err(KeychainError::InvalidName(provider.to_owned()));
    }
    Entry::new(SERVICE, provider).map_err(|e| map_error(provider, e))
}

fn map_error(provider: &str, e: keyring::Error) -> KeychainError {
    match e {
        keyring::Error::PlatformFailure(e) | keyring::Error::NoStorageAccess(e) => {
            KeychainError::Unavailable(e.to_string())
        }
        // The bytes it carries are the secret: never format them.
        keyring::Error::BadEncoding(_) => KeychainError::NotText(provider.to_owned()),
        keyring::Error::TooLong(..) | keyring::Error::Invalid(..) => {
            KeychainError::InvalidName(provider.to_owned())
        }
        keyring::Error::NoEntry => KeychainError::Backend("no entry".into()),
        keyring::Error::Ambiguous(found) => {
            KeychainError::Backend(format!("{} entries match `{provider}`", found.len()))
        }
        other => KeychainError::Backend(other.to_string()),
    }
}

/// The key stored for `provider`, if any.
pub fn get_key(provider: &str) -> Result<Option<String>, KeychainError> {
    match entry(provider)?.get_password() {
        Ok(key) => Ok(Some(key)),
        Err(keyring::Error::NoEntry) => Ok(None),
        Err(e) => Err(map_error(provider, e)),
    }
}

/// Stores (or replaces) the key for `provider`.
pub fn set_key(provider: &str, key: &str) -> Result<(), KeychainError> {
    entry(provider)?
        .set_password(key)
        .map_err(|e| map_error(provider, e))
}

/// Removes the key for `provider`; `Ok(false)` if there was none.
pub fn delete_key(provider: &str) -> Result<bool, KeychainError> {
    match entry(provider)?.delete_credential() {
        Ok(()) => Ok(true),
        Err(keyring::Error::NoEntry) => Ok(false),
        Err(e) => Err(map_error(provider, e)),
    }
}

/// The key to use for `provider`: `POCKETPILOT_API_KEY` if set and not empty, else the
/// keychain's. `Ok(None)` means no key anywhere (fine for local servers).
pub fn resolve_api_key(provider: &str) -> Result<Option<String>, KeychainError> {
    resolve_with(std::env::var(ENV_API_KEY).ok(), || get_key(provider))
}

/// [`resolve_api_key`] with the environment passed in.
pub fn resolve_with(
    env_value: Option<String>,
    keychain: impl FnOnce() -> Result<Option<String>, KeychainError>,
) -> Result<Option<String>, KeychainError> {
    match env_value.map(|v| v.trim().to_owned()) {
        Some(v) if !v.is_empty() => Ok(Some(v)),
        _ => keychain(),
    }
}

/// The account [`probe`] looks up; no key is ever filed under it.
const PROBE_ACCOUNT: &str = "pocketpilot-keychain-probe";

/// Whether the keychain answers, without reading any key: looking up an account that
/// never exists needs no unlock prompt (a locked Secret Service still searches). Returns
/// the backend's name.
pub fn probe() -> Result<&'static str, KeychainError> {
    match entry(PROBE_ACCOUNT)?.get_password() {
        Ok(_) | Err(keyring::Error::NoEntry) => Ok(backend_name()),
        Err(e) => Err(map_error(PROBE_ACCOUNT, e)),
    }
}

/// keyring 3 with both Linux backends compiled in uses the Secret Service.
fn backend_name() -> &'static str {
    if cfg!(target_os = "linux") {
        "Secret Service"
    } else if cfg!(target_os = "macos") {
        "macOS Keychain"
    } else if cfg!(windows) {
        "Windows Credential Manager"
    } else {
        "OS keychain"
    }
}
