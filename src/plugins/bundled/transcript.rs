//! The transcript plugin: every run's exchanges (what was sent, what came back), loop after
//! loop, for a person debugging it, in `$RUMMY_HOME/transcripts/<project>-<id>/<run>.txt`.
//! One folder per project, so an operator can give each project's people its own
//! transcripts and no one else's; names are reduced to safe characters, so no project or
//! run name reaches outside its folder. Files older than `RUMMY_RETENTION_DAYS` are removed
//! at start ([`purge_older_than`]).
//!
//! It observes events and hands the text to its own writer thread, in order, so a slow disk
//! never holds up a turn.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Sender};
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use crate::db::ids::{ProjectId, RunId};
use crate::plugins::events::{Event, Hook, Observer};
use crate::plugins::plugin::{Plugin, Registrar};

/// Most characters of a project or run name kept in a file name.
const NAME_MAX_CHARS: usize = 80;

/// Most transcript files the writer keeps open (one per loop under way); past it, it closes
/// them all and reopens as it goes.
const MAX_OPEN_FILES: usize = 256;

/// One append to one run's transcript.
struct Chunk {
    path: PathBuf,
    text: String,
    /// The loop's last append: the file is closed after it.
    last: bool,
}

/// Appends each loop and turn of a run to that run's file.
pub(crate) struct Transcript {
    folder: PathBuf,
    sender: Mutex<Option<Sender<Chunk>>>,
    writer: Option<JoinHandle<()>>,
    /// Where each run with a loop under way writes (set when its loop starts).
    files: Mutex<HashMap<RunId, PathBuf>>,
}

impl Transcript {
    /// Transcripts under `folder` (`$RUMMY_HOME/transcripts`), written by a thread of its own.
    pub(crate) fn new(folder: PathBuf) -> Transcript {
        let (sender, receiver) = channel::<Chunk>();
        let writer = std::thread::Builder::new()
            .name("rummy-transcript".into())
            .spawn(move || {
                let mut open = HashMap::new();
                for chunk in receiver {
                    append(&mut open, chunk);
                }
            })
            .map_err(|error| tracing::warn!(%error, "no transcript writer"))
            .ok();
        Transcript {
            folder,
            sender: Mutex::new(Some(sender)),
            writer,
            files: Mutex::new(HashMap::new()),
        }
    }

    /// The file of run `alias` of project `name` (id `project`).
    pub(crate) fn file_of(&self, project: ProjectId, name: &str, alias: &str) -> PathBuf {
        self.folder
            .join(format!("{}-{project}", safe_name(name)))
            .join(format!("{}.txt", safe_name(alias)))
    }

    fn write(&self, run: RunId, text: String, last: bool) {
        let path = self
            .files
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(&run)
            .cloned();
        let Some(path) = path else {
            return;
        };
        let sender = self
            .sender
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(sender) = sender.as_ref() {
            let _ = sender.send(Chunk { path, text, last });
        }
    }

    fn start(&self, run: RunId, path: PathBuf) {
        self.files
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(run, path);
    }

    fn end(&self, run: RunId) {
        self.files
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .remove(&run);
    }
}

impl Drop for Transcript {
    /// Lets the writer finish what it was given.
    fn drop(&mut self) {
        if let Ok(mut sender) = self.sender.lock() {
            sender.take();
        }
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

/// `text` reduced to ASCII letters, digits, `-` and `_` (anything else becomes `_`), cut to
/// [`NAME_MAX_CHARS`]; never empty, never a path of its own.
fn safe_name(text: &str) -> String {
    let name: String = text
        .chars()
        .take(NAME_MAX_CHARS)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.is_empty() {
        "_".to_owned()
    } else {
        name
    }
}

/// Appends `chunk` to its file, kept open in `open` from the loop's first append to its last.
fn append(open: &mut HashMap<PathBuf, std::fs::File>, chunk: Chunk) {
    if !open.contains_key(&chunk.path) && open.len() >= MAX_OPEN_FILES {
        open.clear();
    }
    let file = match open.entry(chunk.path.clone()) {
        Entry::Occupied(file) => Ok(file.into_mut()),
        Entry::Vacant(slot) => chunk
            .path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| {
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&chunk.path)
            })
            .map(|file| slot.insert(file)),
    };
    let written = file.and_then(|file| file.write_all(chunk.text.as_bytes()));
    if let Err(error) = written {
        tracing::warn!(path = %chunk.path.display(), %error, "cannot write the transcript");
        open.remove(&chunk.path);
    } else if chunk.last {
        open.remove(&chunk.path);
    }
}

/// Removes the transcripts under `folder` last written more than `age` ago, and project
/// folders left empty; returns how many files went. Blocking: call it on the blocking pool.
pub(crate) fn purge_older_than(folder: &Path, age: Duration) -> io::Result<usize> {
    let Some(cutoff) = SystemTime::now().checked_sub(age) else {
        return Ok(0);
    };
    let projects = match std::fs::read_dir(folder) {
        Ok(projects) => projects,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(error) => return Err(error),
    };
    let mut removed = 0;
    for project in projects {
        let project = project?.path();
        if !project.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&project)? {
            let file = file?;
            let metadata = file.metadata()?;
            if metadata.is_file() && metadata.modified()? < cutoff {
                std::fs::remove_file(file.path())?;
                removed += 1;
            }
        }
        if std::fs::read_dir(&project)?.next().is_none() {
            std::fs::remove_dir(&project)?;
        }
    }
    Ok(removed)
}

impl Plugin for Transcript {
    fn name(&self) -> &'static str {
        "transcript"
    }

    fn register(self: Box<Self>, registrar: &mut Registrar<'_>) {
        registrar.observer(*self);
    }
}

impl Observer for Transcript {
    fn hooks(&self) -> &[Hook] {
        &[Hook::LoopStarted, Hook::TurnResponse, Hook::LoopCompleted]
    }

    fn priority(&self) -> i32 {
        900
    }

    fn observe(&self, event: &Event<'_>) {
        match *event {
            Event::LoopStarted {
                run,
                alias,
                project,
                project_name,
                mode,
                prompt,
                ..
            } => {
                self.start(run, self.file_of(project, project_name, alias));
                self.write(
                    run,
                    format!("# run {alias}, {} loop\n{prompt}\n", mode.as_str()),
                    false,
                );
            }
            Event::TurnResponse {
                run,
                turn,
                system,
                user,
                content,
            } => self.write(
                run,
                format!(
                    "\n## turn {turn}\n### system\n{system}\n### user\n{user}\n### assistant\n{content}\n"
                ),
                false,
            ),
            Event::LoopEnded { run, status, .. } => {
                self.write(run, format!("\n# ended {}\n\n", status.code()), true);
                self.end(run);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::enums::{LoopMode, RunStatus};
    use crate::db::ids::LoopId;

    fn one_loop(transcript: &Transcript, run: i64, project: (i64, &str), alias: &str, text: &str) {
        transcript.observe(&Event::LoopStarted {
            run: RunId(run),
            loop_id: LoopId(run),
            alias,
            project: ProjectId(project.0),
            project_name: project.1,
            project_root: std::path::Path::new("/srv"),
            mode: LoopMode::Ask,
            prompt: text,
        });
        transcript.observe(&Event::TurnResponse {
            run: RunId(run),
            turn: 1,
            system: "SYSTEM",
            user: text,
            content: "<summarize>3000</summarize>",
        });
        transcript.observe(&Event::LoopEnded {
            run: RunId(run),
            loop_id: LoopId(run),
            status: RunStatus::Completed,
        });
    }

    #[test]
    fn each_run_has_its_own_file_in_its_projects_folder() {
        let home = tempfile::tempdir().unwrap();
        let transcript = Transcript::new(home.path().join("transcripts"));
        one_loop(&transcript, 1, (1, "shop"), "grok_1", "shop secret");
        one_loop(&transcript, 2, (2, "bank"), "grok_2", "bank secret");
        one_loop(&transcript, 1, (1, "shop"), "grok_1", "second question");
        let shop = transcript.file_of(ProjectId(1), "shop", "grok_1");
        let bank = transcript.file_of(ProjectId(2), "bank", "grok_2");
        drop(transcript);
        assert_eq!(shop, home.path().join("transcripts/shop-1/grok_1.txt"));
        let shop = std::fs::read_to_string(shop).unwrap();
        let bank = std::fs::read_to_string(bank).unwrap();
        assert!(shop.contains("shop secret") && shop.contains("second question"));
        assert!(shop.contains("### assistant\n<summarize>3000</summarize>"));
        assert_eq!(shop.matches("# ended 200").count(), 2, "{shop}");
        assert!(!shop.contains("bank") && !bank.contains("shop"), "{bank}");
    }

    #[test]
    fn names_never_leave_the_folder() {
        let transcript = Transcript::new(PathBuf::from("/home/transcripts"));
        for (name, alias) in [("../../etc", "passwd"), ("a/b", ".."), ("", "")] {
            let path = transcript.file_of(ProjectId(3), name, alias);
            let relative = path.strip_prefix("/home/transcripts").unwrap();
            assert_eq!(relative.components().count(), 2, "{path:?}");
            assert!(
                relative
                    .components()
                    .all(|part| matches!(part, std::path::Component::Normal(_))),
                "{path:?}"
            );
        }
        assert_eq!(safe_name("grök run"), "gr_k_run");
        assert_eq!(safe_name(&"x".repeat(200)).len(), NAME_MAX_CHARS);
    }

    #[test]
    fn events_of_a_run_without_a_started_loop_are_dropped() {
        let home = tempfile::tempdir().unwrap();
        let transcript = Transcript::new(home.path().join("transcripts"));
        transcript.observe(&Event::LoopEnded {
            run: RunId(7),
            loop_id: LoopId(7),
            status: RunStatus::Failed,
        });
        drop(transcript);
        assert!(!home.path().join("transcripts").exists());
    }

    #[test]
    fn the_purge_removes_old_transcripts_and_empty_folders() {
        let home = tempfile::tempdir().unwrap();
        let folder = home.path().join("transcripts");
        for (project, run) in [("old-1", "a"), ("mixed-2", "b"), ("mixed-2", "c")] {
            std::fs::create_dir_all(folder.join(project)).unwrap();
            std::fs::write(folder.join(project).join(format!("{run}.txt")), run).unwrap();
        }
        let long_ago = SystemTime::now() - Duration::from_secs(40 * 86_400);
        for stale in ["old-1/a.txt", "mixed-2/b.txt"] {
            std::fs::File::options()
                .write(true)
                .open(folder.join(stale))
                .unwrap()
                .set_modified(long_ago)
                .unwrap();
        }
        let removed = purge_older_than(&folder, Duration::from_secs(31 * 86_400)).unwrap();
        assert_eq!(removed, 2);
        assert!(!folder.join("old-1").exists());
        assert!(!folder.join("mixed-2/b.txt").exists());
        assert!(folder.join("mixed-2/c.txt").exists());
        assert_eq!(
            purge_older_than(&home.path().join("none"), Duration::ZERO).unwrap(),
            0
        );
    }
}
