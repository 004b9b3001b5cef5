//! A pseudo-terminal for the tests that run the real binary on a terminal: open one, follow
//! what the process writes to it, wait for a text to show.
use std::fs::File;
use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A pseudo-terminal: (controller, the process's side).
pub fn openpty() -> (File, OwnedFd) {
    let (mut controller, mut terminal) = (0, 0);
    // SAFETY: openpty writes two new descriptors into the out-parameters; the name, termios
    // and window size may be null.
    let rc = unsafe {
        libc::openpty(
            &mut controller,
            &mut terminal,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors are fresh and owned by nobody else.
    unsafe {
        (
            File::from_raw_fd(controller),
            OwnedFd::from_raw_fd(terminal),
        )
    }
}

pub fn wait_for(seen: &Mutex<Vec<u8>>, what: &str) {
    let t0 = Instant::now();
    while !String::from_utf8_lossy(&seen.lock().unwrap()).contains(what) {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the terminal never showed {what:?}; it showed:\n{}",
            String::from_utf8_lossy(&seen.lock().unwrap())
        );
        // sleep: the poll interval of the bounded wait for the terminal's output.
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Everything the process writes to the terminal, gathered by a thread until it is gone.
pub fn follow(controller: &File) -> Arc<Mutex<Vec<u8>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut reader = controller.try_clone().unwrap();
    let sink = seen.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        // Ends with EIO once the child and every copy of its side are gone.
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    });
    seen
}
