//! The operator's `RUMMY_HOME`: the `skills/` and `personas/` directories of markdown
//! documents (`<name>.md`) that the `listSkills`, `skill/add`, `persona/set` and
//! `listPersonas` methods read. Names are validated before they touch a path, so a client
//! cannot read outside those directories.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use super::ProjectError;

/// The extension of skill and persona documents.
const DOCUMENT_EXTENSION: &str = "md";

/// The longest file name, in bytes, that common file systems hold (Linux's `NAME_MAX`; ext4,
/// XFS, btrfs, APFS and NTFS's 255 UTF-16 units are no shorter).
const MAX_FILE_NAME_BYTES: usize = 255;

/// The longest document name: its file name is the name, a dot and the extension.
const MAX_DOCUMENT_NAME_BYTES: usize = MAX_FILE_NAME_BYTES - 1 - DOCUMENT_EXTENSION.len();

/// The `RUMMY_HOME` directory.
#[derive(Debug, Clone)]
pub(crate) struct RummyHome {
    root: PathBuf,
}

/// The two kinds of documents kept in `RUMMY_HOME`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DocumentKind {
    /// `$RUMMY_HOME/skills/<name>.md`, loaded into a run as `skill://<name>`.
    Skill,
    /// `$RUMMY_HOME/personas/<name>.md`, appended to a run's instructions.
    Persona,
}

/// A document found in a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HomeDocument {
    /// The file name without `.md`.
    pub name: String,
    /// Its path under `RUMMY_HOME` (`skills/<name>.md`): what clients are shown, which says
    /// nothing of where the server keeps its home.
    pub path: PathBuf,
}

/// A document read by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LoadedDocument {
    /// The name it was read by.
    pub name: String,
    /// Its path under `RUMMY_HOME` (the `source` attribute of a skill entry).
    pub path: PathBuf,
    /// The file's content (invalid UTF-8 replaced by U+FFFD).
    pub body: String,
}

impl DocumentKind {
    /// The directory name under `RUMMY_HOME`.
    pub(crate) fn directory_name(self) -> &'static str {
        match self {
            Self::Skill => "skills",
            Self::Persona => "personas",
        }
    }
}

impl RummyHome {
    /// A home at `root` (not touched until used).
    pub(crate) fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The home from the `RUMMY_HOME` setting; unset or empty is
    /// [`ProjectError::HomeNotConfigured`] ("RUMMY_HOME not configured").
    #[cfg(test)]
    pub(crate) fn from_setting(setting: Option<&Path>) -> Result<Self, ProjectError> {
        match setting {
            Some(root) if !root.as_os_str().is_empty() => Ok(Self::new(root)),
            _ => Err(ProjectError::HomeNotConfigured),
        }
    }

    /// The home directory itself.
    #[cfg(test)]
    pub(crate) fn path(&self) -> &Path {
        &self.root
    }

    /// The directory holding documents of `kind`.
    pub(crate) fn directory(&self, kind: DocumentKind) -> PathBuf {
        self.root.join(kind.directory_name())
    }

    /// Creates the home, `skills/` and `personas/` where missing.
    #[cfg(test)]
    pub(crate) fn ensure_layout(&self) -> Result<(), ProjectError> {
        for kind in [DocumentKind::Skill, DocumentKind::Persona] {
            let directory = self.directory(kind);
            fs::create_dir_all(&directory).map_err(|source| ProjectError::io(directory, source))?;
        }
        Ok(())
    }

    /// Every `<name>.md` regular file of `kind` whose name is valid, sorted by name; empty
    /// when the directory does not exist.
    pub(crate) fn list(&self, kind: DocumentKind) -> Result<Vec<HomeDocument>, ProjectError> {
        let directory = self.directory(kind);
        let entries = match fs::read_dir(&directory) {
            Ok(entries) => entries,
            Err(error) if error.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(error) => return Err(ProjectError::io(directory, error)),
        };
        let mut documents = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|source| ProjectError::io(&directory, source))?;
            let path = entry.path();
            let is_document = path
                .extension()
                .is_some_and(|ext| ext == DOCUMENT_EXTENSION)
                && fs::metadata(&path).is_ok_and(|metadata| metadata.is_file());
            let name = path.file_stem().and_then(|stem| stem.to_str());
            if let Some(name) =
                name.filter(|name| is_document && validate_document_name(name).is_ok())
            {
                documents.push(HomeDocument {
                    name: name.to_string(),
                    path: Path::new(kind.directory_name()).join(entry.file_name()),
                });
            }
        }
        documents.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(documents)
    }

    /// Reads the document `name` of `kind`. Errors: [`ProjectError::NameRequired`] for an
    /// empty name, [`ProjectError::InvalidName`] for one that could leave the directory,
    /// [`ProjectError::NotFound`] (`Not found: skills/<name>.md`) when there is no such file.
    pub(crate) fn read(
        &self,
        kind: DocumentKind,
        name: &str,
    ) -> Result<LoadedDocument, ProjectError> {
        validate_document_name(name)?;
        let shown = Path::new(kind.directory_name()).join(format!("{name}.{DOCUMENT_EXTENSION}"));
        let path = self.absolute(&self.root.join(&shown));
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == ErrorKind::NotFound => {
                return Err(ProjectError::NotFound(shown))
            }
            Err(error) => return Err(ProjectError::io(path, error)),
        };
        let body = match String::from_utf8(bytes) {
            Ok(body) => body,
            Err(error) => {
                tracing::warn!(document.path = %path.display(), "document is not UTF-8; replaced invalid bytes");
                String::from_utf8_lossy(error.as_bytes()).into_owned()
            }
        };
        Ok(LoadedDocument {
            name: name.to_string(),
            path: shown,
            body,
        })
    }

    /// `path` made absolute (a relative `RUMMY_HOME` is taken from the working directory).
    fn absolute(&self, path: &Path) -> PathBuf {
        std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
    }
}

/// Checks a skill or persona name: not empty, no `/`, `\` or NUL, no `..`, and short
/// enough to be a file name with its extension.
pub(crate) fn validate_document_name(name: &str) -> Result<&str, ProjectError> {
    if name.is_empty() {
        return Err(ProjectError::NameRequired);
    }
    if name.len() > MAX_DOCUMENT_NAME_BYTES {
        return Err(ProjectError::NameTooLong {
            max: MAX_DOCUMENT_NAME_BYTES,
        });
    }
    if name.contains(['/', '\\', '\0']) || name.contains("..") || name == "." {
        return Err(ProjectError::InvalidName(name.to_string()));
    }
    Ok(name)
}

#[cfg(test)]
mod tests;
