//! What a command run on the server came to: the status of its entry and the footer line
//! that says why, from how it ended.

use crate::db::enums::EntryStatus;

use super::SETUP_FAILED;

/// `128 +` these: the kernel ended the command at its CPU or file size limit.
const SIGXCPU: u8 = 24;
const SIGXFSZ: u8 = 25;

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ending {
    /// It exited with this status (`128 + n` for signal n, as a shell reports it).
    Exited(u8),
    /// It ran past the wall-clock limit of this many seconds and was killed.
    TimedOut(u64),
    /// Its output passed this many bytes and it was killed.
    TooMuchOutput(u64),
    /// A person (or the operator, `None`) aborted the run.
    Aborted(Option<String>),
    /// The launcher could not be started.
    NotStarted(String),
}

/// The limits an ending is reported against.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reported {
    pub cpu_secs: u64,
    pub file_mb: u64,
    pub processes: u64,
    /// The process limit was reached while it ran.
    pub hit_process_limit: bool,
}

/// What the command's entry becomes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CommandOutcome {
    pub status: EntryStatus,
    /// The output kept, then the footer when there is one.
    pub body: String,
    /// The exit status, when it exited.
    pub exit: Option<u8>,
    /// Aborted: the run stops, whatever else is pending.
    pub aborted: bool,
}

impl CommandOutcome {
    /// The outcome of a command that ended so, having printed `output`.
    pub(crate) fn of(ending: &Ending, output: String, limits: Reported) -> CommandOutcome {
        let (status, footer) = match ending {
            Ending::Exited(0) => (EntryStatus::Ok, None),
            Ending::Exited(SETUP_FAILED) if output.contains("rummy sandbox:") => (
                EntryStatus::Failed,
                Some("[the sandbox could not start the command]".to_owned()),
            ),
            Ending::Exited(code) if *code == 128 + SIGXCPU => (
                EntryStatus::Unprocessable,
                Some(format!(
                    "[CPU limit of {} s reached; killed]",
                    limits.cpu_secs
                )),
            ),
            Ending::Exited(code) if *code == 128 + SIGXFSZ => (
                EntryStatus::Unprocessable,
                Some(format!(
                    "[file size limit of {} MiB reached]",
                    limits.file_mb
                )),
            ),
            Ending::Exited(code) if limits.hit_process_limit => (
                EntryStatus::Unprocessable,
                Some(format!(
                    "[process limit of {} reached; exit status {code}]",
                    limits.processes
                )),
            ),
            Ending::Exited(code) => (EntryStatus::Failed, Some(format!("[exit status {code}]"))),
            Ending::TimedOut(secs) => (
                EntryStatus::GatewayTimeout,
                Some(format!(
                    "[timed out after {secs} s; its processes were killed]"
                )),
            ),
            Ending::TooMuchOutput(bytes) => (
                EntryStatus::TooLarge,
                Some(format!("[output past {bytes} bytes; killed]")),
            ),
            Ending::Aborted(person) => (
                EntryStatus::Failed,
                Some(match person {
                    Some(person) => format!("[aborted by {person}]"),
                    None => "[aborted]".to_owned(),
                }),
            ),
            Ending::NotStarted(reason) => (
                EntryStatus::Failed,
                Some(format!("[the sandbox could not start: {reason}]")),
            ),
        };
        let body = match footer {
            Some(footer) if output.is_empty() => footer,
            Some(footer) => format!("{}\n{footer}", output.trim_end_matches('\n')),
            None => output,
        };
        CommandOutcome {
            status,
            body,
            exit: match ending {
                Ending::Exited(code) => Some(*code),
                _ => None,
            },
            aborted: matches!(ending, Ending::Aborted(_)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Reported = Reported {
        cpu_secs: 2,
        file_mb: 1,
        processes: 64,
        hit_process_limit: false,
    };

    fn outcome(ending: Ending) -> (i32, String) {
        let outcome = CommandOutcome::of(&ending, "out\n".into(), LIMITS);
        (outcome.status.code(), outcome.body)
    }

    #[test]
    fn each_ending_gives_its_status_and_footer() {
        assert_eq!(outcome(Ending::Exited(0)), (200, "out\n".into()));
        assert_eq!(
            outcome(Ending::Exited(1)),
            (500, "out\n[exit status 1]".into())
        );
        assert_eq!(
            outcome(Ending::Exited(152)),
            (422, "out\n[CPU limit of 2 s reached; killed]".into())
        );
        assert_eq!(
            outcome(Ending::Exited(153)),
            (422, "out\n[file size limit of 1 MiB reached]".into())
        );
        assert_eq!(
            outcome(Ending::TimedOut(5)),
            (
                504,
                "out\n[timed out after 5 s; its processes were killed]".into()
            )
        );
        assert_eq!(
            outcome(Ending::TooMuchOutput(9)),
            (413, "out\n[output past 9 bytes; killed]".into())
        );
        assert_eq!(
            outcome(Ending::Aborted(Some("ana".into()))),
            (500, "out\n[aborted by ana]".into())
        );
        assert_eq!(
            outcome(Ending::Exited(125)).0,
            500,
            "125 from the command itself"
        );
        let setup = CommandOutcome::of(
            &Ending::Exited(125),
            "rummy sandbox: Landlock".into(),
            LIMITS,
        );
        assert!(setup
            .body
            .ends_with("[the sandbox could not start the command]"));
    }

    #[test]
    fn a_failure_at_the_process_limit_says_so_and_only_an_abort_stops_the_run() {
        let limited = Reported {
            hit_process_limit: true,
            ..LIMITS
        };
        let bomb = CommandOutcome::of(&Ending::Exited(2), String::new(), limited);
        assert_eq!(bomb.status, EntryStatus::Unprocessable);
        assert_eq!(bomb.body, "[process limit of 64 reached; exit status 2]");
        assert_eq!(bomb.exit, Some(2));
        let ok = CommandOutcome::of(&Ending::Exited(0), String::new(), limited);
        assert_eq!(ok.status, EntryStatus::Ok, "a success is a success");
        assert!(CommandOutcome::of(&Ending::Aborted(None), String::new(), LIMITS).aborted);
        assert!(!CommandOutcome::of(&Ending::TimedOut(1), String::new(), LIMITS).aborted);
    }
}
