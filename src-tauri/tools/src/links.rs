//! Hard links (issue 15). A regular file in the workspace with more than one link may be
//! the same inode as a file outside it (`ln /outside/secret ws/x`): reading it would read
//! the outside file without any path leaving the workspace. A read is allowed only when
//! every link of the file is found inside the workspace or inside a store the person
//! allowed for the workspace (`pocketpilot sandbox allow-links DIR`, e.g. a pnpm store
//! whose files `node_modules` hard-links); otherwise it is refused. Writes never reach
//! another link: they replace the name by `rename(2)` (see `Sandbox::write_atomic`).
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Entries a search looks at in each tree before giving up (then the read is refused).
pub const MAX_SCANNED: usize = 200_000;

/// Whether every one of `meta`'s links is inside `trees` (each searched once, on the
/// file's device only).
pub fn all_links_within(meta: &std::fs::Metadata, trees: &[PathBuf]) -> bool {
    let (dev, ino, want) = (meta.dev(), meta.ino(), meta.nlink());
    let mut found = 0u64;
    let mut scanned = 0usize;
    for tree in trees {
        found += count_links(tree, dev, ino, &mut scanned);
        if found >= want {
            return true;
        }
    }
    false
}

fn count_links(tree: &Path, dev: u64, ino: u64, scanned: &mut usize) -> u64 {
    let mut found = 0;
    let mut stack = vec![tree.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            *scanned += 1;
            if *scanned > MAX_SCANNED {
                return found;
            }
            // Not followed: a symlink is not a link of the inode.
            let Ok(m) = entry.path().symlink_metadata() else {
                continue;
            };
            if m.dev() != dev {
                continue;
            }
            if m.is_dir() {
                stack.push(entry.path());
            } else if m.is_file() && m.ino() == ino {
                found += 1;
            }
        }
    }
    found
}
