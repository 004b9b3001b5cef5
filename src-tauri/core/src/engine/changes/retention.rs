//! Retention of kept contents: change sets older than the age limit, then the oldest
//! while the blob store is over its size cap, become `pruned` (listed, no longer
//! undoable); blobs no set (nor a workspace's last index) names are deleted.
use std::collections::HashSet;
use std::path::Path;

use pocketpilot_changes::scan::Index;
use pocketpilot_protocol::changes::{ChangeSetStatus, Node};

use super::{blob_store, load_settings, ChangeError};
use crate::store::{change_sets, ChangeSet, Store};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Pruned {
    pub sets: usize,
    pub blobs: usize,
    pub bytes_freed: u64,
    pub bytes_kept: u64,
}

pub(crate) fn names_of(set: &ChangeSet, out: &mut HashSet<String>) {
    for c in &set.changes {
        for n in [&c.before, &c.after].into_iter().flatten() {
            if let Node::File { hash, .. } = n {
                out.insert(hash.clone());
            }
        }
    }
    if let Some(p) = &set.pre_index {
        out.insert(p.clone());
    }
}

/// A pending set's prior state is the index it names: every blob in it stays.
pub(crate) fn names_in_index(
    blobs: &pocketpilot_changes::BlobStore,
    name: &str,
    out: &mut HashSet<String>,
) {
    if let Ok(index) = blobs.read(name).and_then(|b| Index::from_bytes(name, &b)) {
        for e in index.entries.values() {
            if let Node::File { hash, .. } = &e.node {
                out.insert(hash.clone());
            }
        }
    }
    out.insert(name.to_owned());
}

/// Blobs kept this recently are spared: a snapshot in progress may not have committed the
/// set naming them yet.
const GRACE: std::time::Duration = std::time::Duration::from_secs(3600);

/// Prunes by the stored settings; `now` is passed in (tests age sets without sleeping).
pub fn prune(
    store: &Store,
    data_dir: &Path,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Pruned, ChangeError> {
    let settings = load_settings(store)?;
    let blobs = blob_store(data_dir)?;
    let cap = u64::from(settings.max_mib) * 1024 * 1024;
    let oldest_kept = now - chrono::Duration::days(i64::from(settings.max_age_days));
    let sets = store.read(change_sets::all)?;
    let mut prune_ids: Vec<i64> = sets
        .iter()
        .filter(|s| s.status != ChangeSetStatus::Pruned && s.status != ChangeSetStatus::Pending)
        .filter(|s| {
            chrono::DateTime::parse_from_rfc3339(&s.created_at)
                .map(|t| t < oldest_kept)
                .unwrap_or(false)
        })
        .map(|s| s.id)
        .collect();
    let listed = blobs.list()?;
    let sizes: std::collections::HashMap<String, u64> =
        listed.iter().map(|(n, s, _)| (n.clone(), *s)).collect();
    let mut live: Vec<&ChangeSet> = sets
        .iter()
        .filter(|s| s.status != ChangeSetStatus::Pruned && !prune_ids.contains(&s.id))
        .collect();
    let mut keep_baselines = baseline_names(data_dir, &blobs);
    for s in sets.iter().filter(|s| s.status == ChangeSetStatus::Pending) {
        if let Some(p) = &s.pre_index {
            names_in_index(&blobs, p, &mut keep_baselines);
        }
    }
    // The cap bounds the history: the copy of the workspace as it is now (the baselines)
    // is not counted against it.
    loop {
        let mut names = HashSet::new();
        live.iter().for_each(|s| names_of(s, &mut names));
        let used: u64 = names.iter().filter_map(|n| sizes.get(n)).sum();
        let oldest = live
            .iter()
            .position(|s| s.status != ChangeSetStatus::Pending);
        match oldest {
            Some(i) if used > cap => prune_ids.push(live.remove(i).id),
            _ => break,
        }
    }
    store.write(|tx| {
        for id in &prune_ids {
            change_sets::set_status(tx, *id, ChangeSetStatus::Pruned)?;
        }
        Ok(())
    })?;
    let mut names = keep_baselines;
    live.iter().for_each(|s| names_of(s, &mut names));
    let mut out = Pruned {
        sets: prune_ids.len(),
        ..Pruned::default()
    };
    let recent = std::time::SystemTime::now() - GRACE;
    for (name, size, at) in &listed {
        if names.contains(name) || *at > recent {
            out.bytes_kept += size;
        } else {
            blobs.remove(name)?;
            out.blobs += 1;
            out.bytes_freed += size;
        }
    }
    Ok(out)
}

/// The blobs the workspaces' last indexes name (and the indexes): kept, so the next scan
/// need not hash everything again.
fn baseline_names(data_dir: &Path, blobs: &pocketpilot_changes::BlobStore) -> HashSet<String> {
    let mut out = HashSet::new();
    let Ok(list) = std::fs::read_dir(data_dir.join("changes").join("baselines")) else {
        return out;
    };
    for f in list.flatten() {
        let Ok(name) = std::fs::read_to_string(f.path()) else {
            continue;
        };
        let name = name.trim().to_owned();
        if let Ok(bytes) = blobs.read(&name) {
            if let Ok(index) = Index::from_bytes(&name, &bytes) {
                for e in index.entries.values() {
                    if let Node::File { hash, .. } = &e.node {
                        out.insert(hash.clone());
                    }
                }
            }
        }
        out.insert(name);
    }
    out
}

/// Removes the blobs among `candidates` (those a deleted session's sets named) that no
/// remaining set, pending index nor workspace baseline names. Blobs kept within the grace
/// are spared, as in `prune` (a snapshot in progress may be about to name them): the next
/// prune takes them. Returns how many were removed.
pub fn sweep(
    store: &Store,
    data_dir: &Path,
    candidates: &HashSet<String>,
    now: std::time::SystemTime,
) -> Result<usize, ChangeError> {
    if candidates.is_empty() {
        return Ok(0);
    }
    let blobs = blob_store(data_dir)?;
    let mut live = baseline_names(data_dir, &blobs);
    for s in store.read(change_sets::all)? {
        names_of(&s, &mut live);
        if s.status == ChangeSetStatus::Pending {
            if let Some(p) = &s.pre_index {
                names_in_index(&blobs, p, &mut live);
            }
        }
    }
    let recent = now - GRACE;
    let mut removed = 0;
    for (name, _, at) in blobs.list()? {
        if candidates.contains(&name) && !live.contains(&name) && at <= recent {
            blobs.remove(&name)?;
            removed += 1;
        }
    }
    Ok(removed)
}
