//! The parts of `/etc` a command may read: what any local user can read there, so a sandbox
//! run as root reads no more than an unprivileged user would. Landlock can only add rights,
//! never take some away below a granted directory, so the list names each readable entry of
//! `/etc` and, inside a directory holding something unreadable (`/etc/ssl` holds `private`),
//! each readable entry of that directory instead of the directory itself.

use std::collections::HashSet;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

/// The directory walked.
const ETC: &str = "/etc";
/// Entries looked at before the walk stops (an odd host); what is left unvisited is not
/// readable.
const MAX_ENTRIES: usize = 10_000;
/// Mode bits: readable by others, and searchable by others.
const OTHERS_READ: u32 = 0o004;
const OTHERS_SEARCH: u32 = 0o001;

/// The files and directories of `/etc` a command may read: each readable by any local user
/// (through symlinks, which Landlock resolves too), never a secret (`shadow*`, `gshadow*`,
/// `sudoers*`, `ssl/private`, `ssh/*_key`, `security/opasswd`) and nothing in or under
/// `excluded` (rummy's configuration, users file and home). Blocking file I/O; the server
/// computes it once.
pub(crate) fn etc_readable(excluded: &[PathBuf]) -> Vec<PathBuf> {
    let walk = readable_tree(Path::new(ETC), excluded, MAX_ENTRIES);
    if walk.truncated {
        tracing::warn!(
            "{ETC} has more than {MAX_ENTRIES} entries: commands may read only those listed \
             before the walk stopped"
        );
    }
    walk.paths
}

/// What [`readable_tree`] found.
#[derive(Debug)]
struct Walk {
    /// Readable entries, a directory standing for all it holds.
    paths: Vec<PathBuf>,
    /// Whether the walk stopped at its cap.
    truncated: bool,
}

/// The readable entries of `top` (never `top` itself, so what appears there later is not
/// readable), in name order.
fn readable_tree(top: &Path, excluded: &[PathBuf], cap: usize) -> Walk {
    let mut visited = HashSet::new();
    if let Ok(metadata) = std::fs::metadata(top) {
        visited.insert((metadata.dev(), metadata.ino()));
    }
    let mut walker = Walker {
        top: top.canonicalize().unwrap_or_else(|_| top.to_path_buf()),
        excluded: excluded
            .iter()
            .flat_map(|path| [path.clone(), path.canonicalize().unwrap_or_default()])
            .filter(|path| !path.as_os_str().is_empty())
            .collect(),
        left: cap,
        truncated: false,
        visited,
    };
    let (paths, _) = walker.directory(top);
    Walk {
        paths,
        truncated: walker.truncated,
    }
}

struct Walker {
    /// The walked directory, resolved.
    top: PathBuf,
    /// Paths left out with all below them, as given and resolved.
    excluded: Vec<PathBuf>,
    /// Entries still to be looked at.
    left: usize,
    truncated: bool,
    /// Directories entered, by device and inode, so a symlink loop is walked once.
    visited: HashSet<(u64, u64)>,
}

impl Walker {
    /// The readable entries of `dir`, and whether that is all of them (then `dir` itself
    /// can stand for them).
    fn directory(&mut self, dir: &Path) -> (Vec<PathBuf>, bool) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return (Vec::new(), false);
        };
        let mut names: Vec<PathBuf> = entries.flatten().map(|entry| entry.path()).collect();
        names.sort();
        let mut readable = Vec::new();
        let mut whole = true;
        for path in names {
            if self.left == 0 {
                self.truncated = true;
                return (readable, false);
            }
            self.left -= 1;
            match self.entry(&path) {
                Entry::Readable(paths) => readable.extend(paths),
                Entry::Partly(paths) => {
                    readable.extend(paths);
                    whole = false;
                }
                Entry::Missing => {}
            }
        }
        (readable, whole)
    }

    /// What of `path` (an entry of a walked directory) is readable.
    fn entry(&mut self, path: &Path) -> Entry {
        let Ok(metadata) = std::fs::metadata(path) else {
            // A dangling symlink: nothing to read, nothing to hide.
            return Entry::Missing;
        };
        let resolved = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        if self.refused(path) || self.refused(&resolved) {
            return Entry::Partly(Vec::new());
        }
        let is_link = path.symlink_metadata().is_ok_and(|m| m.is_symlink());
        if is_link && !ancestors_searchable(&resolved) {
            return Entry::Partly(Vec::new());
        }
        let mode = metadata.permissions().mode();
        if !metadata.is_dir() {
            return if mode & OTHERS_READ != 0 {
                Entry::Readable(vec![path.to_path_buf()])
            } else {
                Entry::Partly(Vec::new())
            };
        }
        if mode & (OTHERS_READ | OTHERS_SEARCH) != OTHERS_READ | OTHERS_SEARCH
            || !self.visited.insert((metadata.dev(), metadata.ino()))
        {
            return Entry::Partly(Vec::new());
        }
        match self.directory(path) {
            (_, true) => Entry::Readable(vec![path.to_path_buf()]),
            (paths, false) => Entry::Partly(paths),
        }
    }

    /// Whether `path` is a secret or lies in or under an excluded path.
    fn refused(&self, path: &Path) -> bool {
        let secret = path.strip_prefix(&self.top).is_ok_and(is_secret);
        secret
            || self
                .excluded
                .iter()
                .any(|excluded| path.starts_with(excluded))
    }
}

/// What an entry contributes.
enum Entry {
    /// All of it is readable: these paths (itself, or the parts of a directory walked).
    Readable(Vec<PathBuf>),
    /// Only these parts of it (maybe none).
    Partly(Vec<PathBuf>),
    /// It does not exist (a dangling symlink).
    Missing,
}

/// Whether `relative` (to `/etc`) names a secret whatever its mode: password hashes, sudo
/// rules, TLS and SSH private keys, old passwords.
fn is_secret(relative: &Path) -> bool {
    let parts: Vec<&str> = relative
        .components()
        .filter_map(|part| match part {
            Component::Normal(name) => name.to_str(),
            _ => None,
        })
        .collect();
    match parts.as_slice() {
        [first, ..]
            if ["shadow", "gshadow", "sudoers"]
                .iter()
                .any(|s| first.starts_with(s)) =>
        {
            true
        }
        ["ssl", "private", ..] => true,
        ["ssh", name, ..] => name.ends_with("_key"),
        ["security", "opasswd", ..] => true,
        _ => false,
    }
}

/// Whether every directory above `path` may be searched by others, so any user can reach it.
fn ancestors_searchable(path: &Path) -> bool {
    path.ancestors().skip(1).all(|dir| {
        std::fs::metadata(dir).is_ok_and(|m| m.permissions().mode() & OTHERS_SEARCH != 0)
    })
}

#[cfg(test)]
mod tests {
    use std::fs::{create_dir_all, set_permissions, write, Permissions};
    use std::os::unix::fs::symlink;

    use super::*;

    /// Writes a file (and its directories) with `mode`.
    fn file(top: &Path, relative: &str, mode: u32) {
        let path = top.join(relative);
        create_dir_all(path.parent().unwrap()).unwrap();
        write(&path, relative).unwrap();
        set_permissions(&path, Permissions::from_mode(mode)).unwrap();
    }

    fn chmod(top: &Path, relative: &str, mode: u32) {
        set_permissions(top.join(relative), Permissions::from_mode(mode)).unwrap();
    }

    fn relative(top: &Path, walk: &Walk) -> Vec<String> {
        walk.paths
            .iter()
            .map(|path| path.strip_prefix(top).unwrap().display().to_string())
            .collect()
    }

    /// A small `/etc`: secrets by name and by mode, a directory with a private part, one
    /// wholly readable, two unreadable, symlinks to a readable file, to secrets, into an
    /// unsearchable directory, dangling and looping, and an excluded directory.
    fn tree() -> tempfile::TempDir {
        let etc = tempfile::tempdir().unwrap();
        let top = etc.path();
        chmod(top, "", 0o755);
        file(top, "passwd", 0o644);
        file(top, "shadow", 0o644);
        file(top, "gshadow-", 0o644);
        file(top, "sudoers.d/rules", 0o644);
        file(top, "machine-secret", 0o600);
        file(top, "ssl/certs/ca.pem", 0o644);
        file(top, "ssl/openssl.cnf", 0o644);
        file(top, "ssl/private/key.pem", 0o644);
        file(top, "ssh/ssh_config", 0o644);
        file(top, "ssh/ssh_host_rsa_key", 0o644);
        file(top, "ssh/ssh_host_rsa_key.pub", 0o644);
        file(top, "security/opasswd", 0o644);
        file(top, "security/limits.conf", 0o644);
        file(top, "pub/x", 0o644);
        file(top, "pub/sub/y", 0o644);
        file(top, "hidden/z", 0o644);
        chmod(top, "hidden", 0o750);
        file(top, "nosearch/w", 0o644);
        chmod(top, "nosearch", 0o744);
        file(top, "rummy/config.toml", 0o644);
        symlink(top.join("pub/x"), top.join("link")).unwrap();
        symlink(top.join("machine-secret"), top.join("secret-link")).unwrap();
        symlink(top.join("shadow"), top.join("hash-link")).unwrap();
        symlink(top.join("nosearch/w"), top.join("unreachable-link")).unwrap();
        symlink(top.join("nowhere"), top.join("dangling")).unwrap();
        symlink(top, top.join("loop")).unwrap();
        etc
    }

    #[test]
    fn only_what_any_user_may_read_and_no_secret_is_listed() {
        let etc = tree();
        let top = etc.path();
        let walk = readable_tree(top, &[top.join("rummy")], MAX_ENTRIES);
        assert!(!walk.truncated);
        assert_eq!(
            relative(top, &walk),
            [
                "link",
                "passwd",
                "pub",
                "security/limits.conf",
                "ssh/ssh_config",
                "ssh/ssh_host_rsa_key.pub",
                "ssl/certs",
                "ssl/openssl.cnf",
            ]
        );
    }

    #[test]
    fn an_excluded_path_is_left_out_with_all_below_it() {
        let etc = tree();
        let top = etc.path();
        let walk = readable_tree(top, &[top.join("pub/sub")], MAX_ENTRIES);
        let listed = relative(top, &walk);
        assert!(listed.contains(&"pub/x".to_string()), "{listed:?}");
        assert!(!listed
            .iter()
            .any(|p| p == "pub" || p.starts_with("pub/sub")));
        assert!(listed.contains(&"rummy".to_string()), "{listed:?}");
    }

    #[test]
    fn the_walk_stops_at_its_cap() {
        let etc = tree();
        let top = etc.path();
        let walk = readable_tree(top, &[], 3);
        assert!(walk.truncated);
        assert!(walk.paths.len() <= 3, "{:?}", walk.paths);
    }

    #[test]
    fn secrets_are_known_by_name() {
        for secret in [
            "shadow",
            "shadow-",
            "gshadow",
            "sudoers",
            "sudoers.d/x",
            "ssl/private",
            "ssl/private/k",
            "ssh/ssh_host_ed25519_key",
            "security/opasswd",
        ] {
            assert!(is_secret(Path::new(secret)), "{secret}");
        }
        for open in [
            "passwd",
            "ssl/certs",
            "ssh/ssh_host_ed25519_key.pub",
            "security",
            "ssh",
            "x/shadow",
        ] {
            assert!(!is_secret(Path::new(open)), "{open}");
        }
    }

    #[test]
    fn this_machine_s_list_has_what_programs_need_and_no_secret() {
        let list = etc_readable(&[]);
        let etc = Path::new(ETC);
        for needed in ["passwd", "ld.so.cache", "ssl/certs"] {
            assert!(list.contains(&etc.join(needed)), "{needed} in {list:?}");
        }
        for secret in ["shadow", "ssl/private"] {
            let secret = etc.join(secret);
            assert!(
                !list.iter().any(|p| p.starts_with(&secret)),
                "{} in {list:?}",
                secret.display()
            );
        }
        for partly in [etc, &etc.join("ssl")] {
            assert!(!list.iter().any(|p| p == partly), "{}", partly.display());
        }
    }
}
