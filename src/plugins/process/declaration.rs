//! Where plugin processes are declared: `RUMMY_PLUGIN_<NAME>=<command args…>` (the command
//! line split at whitespace, serving every project) or a file `$RUMMY_HOME/plugins/<name>.toml`
//! or `<name>.json`:
//!
//! ```toml
//! command = "python3"
//! args = ["/opt/rummy/guard.py"]
//! env = { GUARD_PATTERN = "rm -rf" }   # values are secrets: never logged
//! projects = ["web", "api-*"]          # project names or globs; "*" (default) is every one
//! timeout_ms = 30000                   # how long a call may take (else the manifest's, else the setting)
//! ```
//!
//! A variable wins over a file of the same name. A file that does not read stops the start
//! with the reason; a missing directory is no plugins.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use crate::config::Secret;
use crate::project::patterns::ProjectPatterns;

/// The directory under `$RUMMY_HOME`.
pub(crate) const DIRECTORY: &str = "plugins";

/// Why a declaration does not read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DeclarationError {
    #[error("{path}: {reason}")]
    Unreadable { path: String, reason: String },
    #[error("plugin {name:?}: {reason}")]
    Invalid { name: String, reason: String },
}

/// One plugin process as declared.
#[derive(Debug, Clone)]
pub(crate) struct Declaration {
    /// What `RUMMY_PLUGINS_DISABLED` and the logs call it: lowercase letters, digits, `_`, `-`.
    pub name: String,
    pub command: String,
    pub args: Vec<String>,
    /// Set in the process's environment (beside rummy's own).
    pub env: BTreeMap<String, Secret>,
    /// The projects whose runs it serves.
    pub projects: ProjectPatterns,
    /// How long a call may take, when its file says.
    pub timeout: Option<Duration>,
}

/// A declaration file as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DeclarationFile {
    command: String,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, Secret>,
    #[serde(default = "every_project")]
    projects: Vec<String>,
    #[serde(default)]
    timeout_ms: Option<u64>,
}

fn every_project() -> Vec<String> {
    vec!["*".to_owned()]
}

/// The plugin processes of `$RUMMY_HOME/plugins/` and of the variables (`from_env`: name →
/// command line), by name. Blocking: reads files.
pub(crate) fn load(
    home: &Path,
    from_env: &BTreeMap<String, String>,
) -> Result<Vec<Declaration>, DeclarationError> {
    let mut declared: BTreeMap<String, Declaration> = BTreeMap::new();
    for declaration in read_directory(&home.join(DIRECTORY))? {
        declared.insert(declaration.name.clone(), declaration);
    }
    for (name, line) in from_env {
        let mut words = line.split_whitespace().map(str::to_owned);
        let Some(command) = words.next() else {
            continue;
        };
        let declaration = Declaration {
            name: checked_name(name)?,
            command,
            args: words.collect(),
            env: BTreeMap::new(),
            projects: patterns(name, every_project())?,
            timeout: None,
        };
        declared.insert(declaration.name.clone(), declaration);
    }
    Ok(declared.into_values().collect())
}

fn read_directory(directory: &Path) -> Result<Vec<Declaration>, DeclarationError> {
    let unreadable = |path: &Path, reason: String| DeclarationError::Unreadable {
        path: path.display().to_string(),
        reason,
    };
    let entries = match std::fs::read_dir(directory) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(unreadable(directory, error.to_string())),
    };
    let mut declarations = Vec::new();
    for entry in entries {
        let path = entry
            .map_err(|error| unreadable(directory, error.to_string()))?
            .path();
        let (Some(stem), Some(extension)) = (
            path.file_stem().and_then(|stem| stem.to_str()),
            path.extension().and_then(|extension| extension.to_str()),
        ) else {
            continue;
        };
        let text = match extension {
            "toml" | "json" => std::fs::read_to_string(&path)
                .map_err(|error| unreadable(&path, error.to_string()))?,
            _ => continue,
        };
        let file: DeclarationFile = if extension == "toml" {
            toml::from_str(&text).map_err(|error| unreadable(&path, error.to_string()))?
        } else {
            serde_json::from_str(&text).map_err(|error| unreadable(&path, error.to_string()))?
        };
        let name = checked_name(stem)?;
        declarations.push(Declaration {
            projects: patterns(&name, file.projects)?,
            name,
            command: file.command,
            args: file.args,
            env: file.env,
            timeout: file.timeout_ms.map(|ms| Duration::from_millis(ms.max(1))),
        });
    }
    Ok(declarations)
}

/// `name`, lowercased, when it is lowercase letters, digits, `_` and `-`.
fn checked_name(name: &str) -> Result<String, DeclarationError> {
    let name = name.to_ascii_lowercase();
    let fits = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
    if fits {
        return Ok(name);
    }
    Err(DeclarationError::Invalid {
        name,
        reason: "a name is lowercase letters, digits, '_' and '-'".into(),
    })
}

fn patterns(name: &str, written: Vec<String>) -> Result<ProjectPatterns, DeclarationError> {
    ProjectPatterns::new(written).map_err(|reason| DeclarationError::Invalid {
        name: name.to_owned(),
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_and_files_declare_plugins_a_variable_winning() {
        let home = tempfile::tempdir().unwrap();
        let directory = home.path().join(DIRECTORY);
        std::fs::create_dir_all(&directory).unwrap();
        std::fs::write(
            directory.join("guard.toml"),
            "command = \"python3\"\nargs = [\"g.py\"]\nprojects = [\"web\"]\ntimeout_ms = 30000\n",
        )
        .unwrap();
        std::fs::write(
            directory.join("echo.json"),
            r#"{"command": "node", "args": ["e.js"], "env": {"K": "v"}}"#,
        )
        .unwrap();
        std::fs::write(directory.join("notes.txt"), "ignored").unwrap();
        let from_env = BTreeMap::from([("echo".to_owned(), "sh  echo.sh  -x".to_owned())]);
        let declared = load(home.path(), &from_env).unwrap();
        let names: Vec<_> = declared
            .iter()
            .map(|declaration| (declaration.name.as_str(), declaration.command.as_str()))
            .collect();
        assert_eq!(names, [("echo", "sh"), ("guard", "python3")]);
        assert_eq!(declared[0].args, ["echo.sh", "-x"]);
        assert!(declared[0].projects.matches("anything"));
        assert!(declared[1].projects.matches("web") && !declared[1].projects.matches("api"));
        assert_eq!(declared[1].timeout, Some(Duration::from_secs(30)));
        assert_eq!(declared[0].timeout, None, "a variable sets no timeout");
    }

    #[test]
    fn a_bad_declaration_names_itself() {
        let home = tempfile::tempdir().unwrap();
        let from_env = BTreeMap::from([("no good".to_owned(), "true".to_owned())]);
        let refused = load(home.path(), &from_env).unwrap_err().to_string();
        assert!(refused.contains("no good"), "{refused}");
        std::fs::create_dir_all(home.path().join(DIRECTORY)).unwrap();
        std::fs::write(home.path().join(DIRECTORY).join("x.toml"), "args = []").unwrap();
        let refused = load(home.path(), &BTreeMap::new()).unwrap_err().to_string();
        assert!(refused.contains("x.toml"), "{refused}");
    }
}
