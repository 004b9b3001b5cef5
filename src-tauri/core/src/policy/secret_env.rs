//! Secrets given to PocketPilot in its environment must not reach the commands the agent
//! runs. Scrubbing a child's environment is not enough: the environment a process started
//! with stays readable in `/proc/<pid>/environ` by every process of the same user — so an
//! approved `cat /proc/$PPID/environ` would show it.
//!
//! So at start, a process that was given secret-looking variables starts itself again
//! (same pid, `exec`) without them; their values come along through a pipe and live only
//! in this process's memory from then on (set after the `exec`, they are not in
//! `/proc/<pid>/environ`). The API key is read from there, and a variable the person
//! passes through to commands per workspace (`pocketpilot sandbox pass-env`) still
//! reaches them.
use std::ffi::OsString;
use std::io::Read;
use std::os::fd::FromRawFd;

use pocketpilot_sandbox::{is_secret_value, looks_secret_name};

/// Why the process could not start again without its secrets (it goes on with them).
#[derive(Debug, thiserror::Error)]
pub enum RelaunchError {
    #[error("the key pipe is not a number")]
    BadPipe,
    #[error("the secret variables are too long to pass on")]
    TooLong,
    #[error("{what}: {source}")]
    Io {
        what: &'static str,
        source: std::io::Error,
    },
}

fn io(what: &'static str) -> impl FnOnce(std::io::Error) -> RelaunchError {
    move |source| RelaunchError::Io { what, source }
}

const FD_VAR: &str = "POCKETPILOT_SECRETS_FD";

/// Call first thing in `main`, before any thread starts. Returns only when there is
/// nothing to hide or the relaunch is impossible (then the reason is returned).
pub fn relaunch_without_secrets() -> Result<(), RelaunchError> {
    if let Some(fd) = std::env::var_os(FD_VAR) {
        std::env::remove_var(FD_VAR);
        let fd: i32 = fd
            .to_str()
            .and_then(|s| s.parse().ok())
            .ok_or(RelaunchError::BadPipe)?;
        // SAFETY: the parent passed us this descriptor for exactly this read; we own it now.
        let mut pipe = unsafe { std::fs::File::from_raw_fd(fd) };
        let mut passed = Vec::new();
        pipe.read_to_end(&mut passed)
            .map_err(io("cannot read the secrets pipe"))?;
        for (name, value) in decode(&passed) {
            // Set after exec: on the heap only, not in /proc/<pid>/environ.
            std::env::set_var(name, value);
        }
        return Ok(());
    }
    // The sandbox's own test, so what is hidden here is what commands never get: a
    // secret-looking name, or a value with a password in a URL. (PocketPilot's own
    // settings stay: only the secret-looking ones among them are hidden.)
    let secrets: Vec<OsString> = std::env::vars_os()
        .filter(|(k, v)| looks_secret_name(k) || is_secret_value(v))
        .map(|(k, _)| k)
        .collect();
    if secrets.is_empty() {
        return Ok(());
    }
    relaunch(&secrets)
}

#[cfg(unix)]
fn relaunch(secrets: &[OsString]) -> Result<(), RelaunchError> {
    use std::io::Write;
    use std::os::unix::process::CommandExt;

    let passed = encode(secrets);
    // A pipe holds 64 KiB without a reader; secrets are far smaller.
    if passed.len() > 60_000 {
        return Err(RelaunchError::TooLong);
    }
    let mut fds = [0i32; 2];
    // SAFETY: pipe writes two new descriptors into the array we own.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(io("pipe")(std::io::Error::last_os_error()));
    }
    let (read_fd, write_fd) = (fds[0], fds[1]);
    {
        // SAFETY: we own the write end; File closes it when dropped.
        let mut w = unsafe { std::fs::File::from_raw_fd(write_fd) };
        w.write_all(&passed)
            .map_err(io("cannot pass the secrets on"))?;
    }
    let exe = std::env::current_exe().map_err(io("cannot find this program"))?;
    let mut args = std::env::args_os();
    let arg0 = args.next().unwrap_or_else(|| exe.clone().into_os_string());
    let mut cmd = std::process::Command::new(&exe);
    cmd.arg0(arg0).args(args).env(FD_VAR, read_fd.to_string());
    for s in secrets {
        cmd.env_remove(s);
    }
    // `exec` only returns on failure; the read end (no close-on-exec) is inherited.
    let err = cmd.exec();
    // SAFETY: exec failed, the descriptor is still ours.
    unsafe { libc::close(read_fd) };
    Err(io("cannot start again without the secrets")(err))
}

/// `NAME=VALUE` pairs, each ended by a NUL (which neither can contain).
#[cfg(unix)]
fn encode(names: &[OsString]) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    let mut out = Vec::new();
    for name in names {
        if let Some(value) = std::env::var_os(name) {
            out.extend_from_slice(name.as_bytes());
            out.push(b'=');
            out.extend_from_slice(value.as_bytes());
            out.push(0);
        }
    }
    out
}

#[cfg(unix)]
fn decode(bytes: &[u8]) -> Vec<(OsString, OsString)> {
    use std::os::unix::ffi::OsStrExt;
    bytes
        .split(|b| *b == 0)
        .filter_map(|pair| {
            let eq = pair.iter().position(|b| *b == b'=')?;
            let name = std::ffi::OsStr::from_bytes(&pair[..eq]);
            let value = std::ffi::OsStr::from_bytes(&pair[eq + 1..]);
            (!name.is_empty()).then(|| (name.to_os_string(), value.to_os_string()))
        })
        .collect()
}

#[cfg(not(unix))]
fn decode(_bytes: &[u8]) -> Vec<(OsString, OsString)> {
    Vec::new()
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn pairs_survive_the_pipe_encoding_values_with_equals_signs_included() {
        std::env::set_var("PP_TEST_SECRET_A", "a=b=c");
        std::env::set_var("PP_TEST_SECRET_B", "");
        let names = [
            OsString::from("PP_TEST_SECRET_A"),
            OsString::from("PP_TEST_SECRET_B"),
            OsString::from("PP_TEST_SECRET_UNSET"),
        ];
        let pairs = decode(&encode(&names));
        assert_eq!(
            pairs,
            vec![
                ("PP_TEST_SECRET_A".into(), "a=b=c".into()),
                ("PP_TEST_SECRET_B".into(), "".into())
            ]
        );
    }
}

#[cfg(not(unix))]
fn relaunch(_secrets: &[OsString]) -> Result<(), RelaunchError> {
    Ok(())
}
