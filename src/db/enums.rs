//! The closed vocabularies stored in the database: fidelity, scheme category, constraint
//! visibility, loop mode and priority, the run/loop status codes and the entry status codes.
//!
//! Each maps to exactly the values the server writes (within what the migration's CHECK
//! constraints allow), so a value read back that is not one of them is reported as a
//! deserialization error, never a panic. On the wire each is its stored text or number.

use diesel::backend::Backend;
use diesel::deserialize::{self, FromSql, FromSqlRow};
use diesel::expression::AsExpression;
use diesel::serialize::{self, Output, ToSql};
use diesel::sql_types::{Integer, Text};

macro_rules! text_enum {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident => $text:literal),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, AsExpression, FromSqlRow)]
        #[diesel(sql_type = Text)]
        pub enum $name {
            $($(#[$vdoc])* $variant),*
        }

        impl $name {
            /// The text stored in the database (and used on the wire).
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),*
                }
            }

            /// Parses the stored text; `None` for anything else.
            pub fn parse(text: &str) -> Option<Self> {
                match text {
                    $($text => Some($name::$variant),)*
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = <String as serde::Deserialize>::deserialize(deserializer)?;
                $name::parse(&text).ok_or_else(|| {
                    serde::de::Error::custom(format!("unexpected {} {text:?}", stringify!($name)))
                })
            }
        }

        impl<DB: Backend> ToSql<Text, DB> for $name
        where
            str: ToSql<Text, DB>,
        {
            fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, DB>) -> serialize::Result {
                <str as ToSql<Text, DB>>::to_sql(self.as_str(), out)
            }
        }

        impl<DB: Backend> FromSql<Text, DB> for $name
        where
            String: FromSql<Text, DB>,
        {
            fn from_sql(value: DB::RawValue<'_>) -> deserialize::Result<Self> {
                let text = <String as FromSql<Text, DB>>::from_sql(value)?;
                $name::parse(&text)
                    .ok_or_else(|| format!("unexpected {} value {text:?}", stringify!($name)).into())
            }
        }
    };
}

macro_rules! integer_enum {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident => $code:literal),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, AsExpression, FromSqlRow)]
        #[diesel(sql_type = Integer)]
        pub enum $name {
            $($(#[$vdoc])* $variant),*
        }

        impl $name {
            /// The integer stored in the database (and used on the wire).
            pub fn code(self) -> i32 {
                match self {
                    $($name::$variant => $code),*
                }
            }

            /// Maps a stored integer back; `None` for anything else.
            pub fn from_code(code: i32) -> Option<Self> {
                match code {
                    $($code => Some($name::$variant),)*
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}", self.code())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_i32(self.code())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let code = <i32 as serde::Deserialize>::deserialize(deserializer)?;
                $name::from_code(code).ok_or_else(|| {
                    serde::de::Error::custom(format!("unexpected {} code {code}", stringify!($name)))
                })
            }
        }

        impl<DB: Backend> ToSql<Integer, DB> for $name
        where
            i32: ToSql<Integer, DB>,
        {
            fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, DB>) -> serialize::Result {
                // A literal's reference is static, as the bind needs.
                let code: &'static i32 = match self {
                    $($name::$variant => &$code),*
                };
                <i32 as ToSql<Integer, DB>>::to_sql(code, out)
            }
        }

        impl<DB: Backend> FromSql<Integer, DB> for $name
        where
            i32: FromSql<Integer, DB>,
        {
            fn from_sql(value: DB::RawValue<'_>) -> deserialize::Result<Self> {
                let code = <i32 as FromSql<Integer, DB>>::from_sql(value)?;
                $name::from_code(code)
                    .ok_or_else(|| format!("unexpected {} code {code}", stringify!($name)).into())
            }
        }
    };
}

text_enum! {
    /// How much of an entry the model sees.
    Fidelity {
        /// The whole body.
        Full => "full",
        /// The model-authored summary (or the start of the body).
        Summary => "summary",
        /// The path only.
        Index => "index",
        /// Nothing; retrievable with `<get>`.
        Archive => "archive",
    }
}

text_enum! {
    /// What happened to an entry (`entry.changed`'s `changeType`, AGENT §1.5).
    ChangeType {
        /// Written: created, or written again by an upsert.
        Upsert => "upsert",
        /// Brought to full fidelity (or touched at full fidelity).
        Promote => "promote",
        /// Set to summary or index fidelity.
        Fidelity => "fidelity",
        /// Archived.
        Demote => "demote",
        /// Deleted, or moved away from this path.
        Remove => "remove",
        /// Its body alone was replaced.
        Body => "body",
        /// Its status changed (a proposal resolved, a command's outcome recorded).
        Resolve => "resolve",
        /// Its attributes alone changed.
        Attributes => "attributes",
    }
}

text_enum! {
    /// The section of the context a scheme renders in.
    Category {
        /// Entries the model works with (`<knowns>`).
        Data => "data",
        /// Records of what happened (`<performed>`/`<previous>`).
        Logging => "logging",
        /// Open questions (`<unknowns>`).
        Unknown => "unknown",
        /// The task driving the loop.
        Prompt => "prompt",
        /// Audit copies, never shown to the model.
        Audit => "audit",
        /// What memory brought to the run (recall), in a section of its own.
        Memory => "memory",
    }
}

text_enum! {
    /// How a project-level file constraint treats matching files.
    Visibility {
        /// Loaded at full fidelity.
        Active => "active",
        /// Loaded at full fidelity and not editable.
        Readonly => "readonly",
        /// Hidden from the model.
        Ignore => "ignore",
    }
}

text_enum! {
    /// What a loop is allowed to do.
    LoopMode {
        /// Non-mutating.
        Ask => "ask",
        /// Mutating.
        Act => "act",
        /// Budget recovery: free context space with a restricted tool set.
        Panic => "panic",
    }
}

text_enum! {
    /// What a person did to a run, besides queueing a loop.
    RunAction {
        /// Accepted a proposal.
        Accept => "accept",
        /// Rejected a proposal.
        Reject => "reject",
        /// Reported that a proposal failed to apply or run.
        Error => "error",
        /// Aborted the run's loop.
        Abort => "abort",
        /// Cancelled their own loops of the run (`run/cancel`).
        Cancel => "cancel",
        /// Asked to put a file back as it was before the run changed it (`run/revert`).
        Revert => "revert",
    }
}

text_enum! {
    /// What a model call made for a run was for.
    CallPurpose {
        /// One of the run's turns.
        Turn => "turn",
        /// The refresh of the run's session notes (memory's sidecar).
        SessionNotes => "session_notes",
        /// The re-rank of a prompt's recall (memory's sidecar).
        Rerank => "rerank",
        /// A call of a run the run delegated a sub-task to, or of one of theirs.
        Subagent => "subagent",
    }
}

text_enum! {
    /// Where a run's title came from: an automatic title replaces one of its own kind or an
    /// earlier kind, never a person's.
    TitleBy {
        /// The first line of the run's first prompt.
        Prompt => "prompt",
        /// The title of the run's session notes.
        Notes => "notes",
        /// A person's name for the run (`run/rename`).
        Person => "person",
    }
}

integer_enum! {
    /// Which pending loop of a run is claimed first: higher priority, then FIFO.
    LoopPriority {
        /// An ordinary prompt.
        Normal => 0,
        /// The retry of a loop that overflowed, run right after its panic loop.
        Retry => 1,
        /// A panic loop, run before anything else.
        Panic => 2,
    }
}

integer_enum! {
    /// The state of a run or a loop (HTTP-like codes).
    RunStatus {
        /// Created or enqueued, not started.
        Queued => 100,
        Running => 102,
        Completed => 200,
        /// Waiting for the client to resolve proposals.
        Proposed => 202,
        /// A spend cap was reached: the loop stopped before the call that would pass it.
        CapReached => 402,
        /// The context overflowed and could not be recovered.
        TooLarge => 413,
        Aborted => 499,
        Failed => 500,
    }
}

integer_enum! {
    /// The state of an entry (HTTP-like codes, PROTOCOL §4.3 "Entry statuses"): how the command that wrote it
    /// went, or where its proposal stands.
    EntryStatus {
        Ok => 200,
        /// A proposal waiting for the client.
        Proposed => 202,
        /// A command that wrote no entry (an empty fact or status); only in call records.
        NoContent => 204,
        /// Invalid: a missing or escaping path, empty text.
        BadRequest => 400,
        /// A spend cap was reached: the loop stopped (its `error://` entry says which cap).
        CapReached => 402,
        /// Rejected by the user, or refused (a readonly file, a tool the mode may not use).
        Forbidden => 403,
        /// The path selects nothing.
        NotFound => 404,
        /// Not applied: an edit that does not match, a command cancelled by an earlier
        /// failure, an update overridden.
        Conflict => 409,
        /// A line range past the end of the entry.
        RangeNotSatisfiable => 416,
        /// Too large, or refused for the budget.
        TooLarge => 413,
        /// A fetched body that is not text.
        UnsupportedMediaType => 415,
        /// Work past its limit.
        Unprocessable => 422,
        /// Commands past the per-reply limit.
        TooManyCommands => 429,
        /// A proposal withdrawn unresolved: its run was aborted while it waited.
        Withdrawn => 499,
        /// Failed, or a proposal whose resolution failed.
        Failed => 500,
        /// A web server, the search backend or an MCP server failed or answered something
        /// unreadable; or the MCP server is not connected, or its session ended during the call.
        BadGateway => 502,
        /// A web server, the search backend or an MCP server did not answer in time.
        GatewayTimeout => 504,
    }
}

impl EntryStatus {
    /// A 4xx or 5xx: the command failed, and the rest of the reply does not run.
    pub fn is_failure(self) -> bool {
        self.code() >= 400
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_enums_travel_as_their_number() {
        assert_eq!(
            serde_json::to_string(&EntryStatus::TooLarge).unwrap(),
            "413"
        );
        assert_eq!(serde_json::to_string(&RunStatus::Proposed).unwrap(), "202");
        assert_eq!(
            serde_json::from_str::<RunStatus>("499").unwrap(),
            RunStatus::Aborted
        );
        assert!(serde_json::from_str::<EntryStatus>("418").is_err());
        assert_eq!(EntryStatus::Conflict.to_string(), "409");
        assert_eq!(
            serde_json::to_string(&Fidelity::Index).unwrap(),
            "\"index\""
        );
    }

    #[test]
    fn failures_are_the_4xx_and_5xx() {
        assert!(!EntryStatus::Ok.is_failure());
        assert!(!EntryStatus::Proposed.is_failure());
        assert!(!EntryStatus::NoContent.is_failure());
        assert!(EntryStatus::BadRequest.is_failure());
        assert!(EntryStatus::Failed.is_failure());
    }
}
