//! Skills (issue 18): folders holding a `SKILL.md` whose YAML front matter names the skill
//! and says when it helps (the Agent Skills layout other agents read too). Found in the
//! workspace's `.agents/skills/` and in the person's own skills directory.
//!
//! Only names and descriptions are listed to the model; a body is read when the model asks
//! for it (`load_skill`, fs:read). Everything in a skill is untrusted data: it may suggest
//! steps, and a script inside it runs only through `run_command`, like any command.
use std::path::{Path, PathBuf};

use pocketpilot_protocol::SkillSource;
use serde::Deserialize;

use crate::guard::WorkspaceGuard;

/// Where a workspace keeps its skills, relative to the root.
pub const WORKSPACE_SKILLS: &str = ".agents/skills";
/// The file that makes a folder a skill.
pub const SKILL_FILE: &str = "SKILL.md";
/// `POCKETPILOT_SKILLS_DIR` overrides the person's skills directory.
pub const SKILLS_DIR_VAR: &str = "POCKETPILOT_SKILLS_DIR";
/// A SKILL.md larger than this is cut (with a marker) when loaded.
pub const MAX_SKILL_BYTES: usize = 64 * 1024;
/// A description longer than this is cut in the list the model sees.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;
/// At most this many skills are listed.
pub const MAX_SKILLS: usize = 100;

/// The person's skills directory: `$POCKETPILOT_SKILLS_DIR`, else
/// `$XDG_CONFIG_HOME/pocketpilot/skills`, else `~/.config/pocketpilot/skills`.
pub fn personal_skills_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os(SKILLS_DIR_VAR).filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(config.join("pocketpilot").join("skills"))
}

/// Where a run looks for skills, and which the person switched off.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SkillSources {
    pub personal: Option<PathBuf>,
    /// Skill folders (absolute, as [`Skill::dir`]) switched off.
    pub disabled: Vec<String>,
}

impl SkillSources {
    pub fn for_this_user() -> Self {
        Self {
            personal: personal_skills_dir(),
            disabled: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    pub source: SkillSource,
    /// The skill's folder, absolute (real path).
    pub dir: PathBuf,
}

impl Skill {
    pub fn key(&self) -> String {
        self.dir.display().to_string()
    }
}

#[derive(Debug, Deserialize)]
struct FrontMatter {
    name: Option<String>,
    description: Option<String>,
}

/// What a scan found: the skills, and a line per folder that is not a usable skill.
#[derive(Debug, Default)]
pub struct Found {
    pub skills: Vec<Skill>,
    pub problems: Vec<String>,
}

/// The skills of a workspace and of the person, workspace ones first; a name found in both
/// is the workspace's. Disabled ones are included (the window shows them).
pub fn discover(guard: &WorkspaceGuard, personal: Option<&Path>) -> Found {
    let mut found = Found::default();
    if let Ok(dir) = guard.resolve_dir(WORKSPACE_SKILLS) {
        scan(&dir, SkillSource::Workspace, Some(guard), &mut found);
    }
    if let Some(dir) = personal.filter(|d| d.is_dir()) {
        scan(dir, SkillSource::Personal, None, &mut found);
    }
    found.skills.truncate(MAX_SKILLS);
    found
}

fn scan(dir: &Path, source: SkillSource, guard: Option<&WorkspaceGuard>, found: &mut Found) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        found
            .problems
            .push(format!("{}: cannot be read", dir.display()));
        return;
    };
    let mut folders: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.join(SKILL_FILE).is_file())
        .collect();
    folders.sort();
    for folder in folders {
        // A workspace skill must stay inside the workspace, links and all.
        let file = match guard {
            Some(g) => match g.resolve_file(&folder.join(SKILL_FILE).display().to_string()) {
                Ok(f) => f,
                Err(e) => {
                    found.problems.push(e.to_string());
                    continue;
                }
            },
            None => folder.join(SKILL_FILE),
        };
        match read_skill(&file, source) {
            Ok(skill) if found.skills.iter().any(|s| s.name == skill.name) => {
                found.problems.push(format!(
                    "{}: a skill named `{}` was found earlier; this one is ignored",
                    file.display(),
                    skill.name
                ));
            }
            Ok(skill) => found.skills.push(skill),
            Err(problem) => found.problems.push(problem),
        }
    }
}

/// A skill's name: lowercase letters, digits and hyphens, at most 64 (as Agent Skills has it).
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

fn read_text(file: &Path) -> Result<String, String> {
    let bytes = std::fs::read(file).map_err(|e| format!("{}: {e}", file.display()))?;
    String::from_utf8(bytes).map_err(|_| format!("{}: not valid UTF-8", file.display()))
}

fn parse(text: &str) -> Option<(FrontMatter, String)> {
    let matter = gray_matter::Matter::<gray_matter::engine::YAML>::new();
    let parsed = matter.parse::<FrontMatter>(text).ok()?;
    Some((parsed.data?, parsed.content))
}

fn read_skill(file: &Path, source: SkillSource) -> Result<Skill, String> {
    let text = read_text(file)?;
    let shown = file.display();
    let Some((front, _)) = parse(&text) else {
        return Err(format!(
            "{shown}: no YAML front matter with `name` and `description`"
        ));
    };
    let name = front.name.unwrap_or_default();
    if !valid_name(&name) {
        return Err(format!(
            "{shown}: `name` must be lowercase letters, digits and hyphens (at most 64), found `{name}`"
        ));
    }
    let description = front.description.unwrap_or_default();
    if description.trim().is_empty() {
        return Err(format!("{shown}: `description` is missing"));
    }
    let dir = file
        .parent()
        .map(Path::to_path_buf)
        .ok_or_else(|| format!("{shown}: no folder"))?;
    Ok(Skill {
        name,
        description: description
            .trim()
            .chars()
            .take(MAX_DESCRIPTION_CHARS)
            .collect(),
        source,
        dir,
    })
}

/// A skill's instructions (the text after its front matter), cut at [`MAX_SKILL_BYTES`]
/// with a marker, and the files beside it.
pub fn load_body(skill: &Skill) -> Result<String, String> {
    let text = read_text(&skill.dir.join(SKILL_FILE))?;
    let body = parse(&text).map(|(_, b)| b).unwrap_or(text);
    let body = crate::text::cut_at(&body, MAX_SKILL_BYTES, "SKILL.md");
    let mut others: Vec<String> = std::fs::read_dir(&skill.dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n != SKILL_FILE)
                .collect()
        })
        .unwrap_or_default();
    others.sort();
    let mut out = format!(
        "Skill `{}` ({} skill, folder {}).\n\n{}",
        skill.name,
        skill.source,
        skill.dir.display(),
        body.trim()
    );
    if !others.is_empty() {
        out.push_str(&format!(
            "\n\nFiles beside SKILL.md: {}. A script among them runs only through run_command, like any command.",
            others.join(", ")
        ));
    }
    Ok(out)
}
