//! A session taken up again (`session/resume`) or copied (`session/fork`).
//!
//! Resumed where this agent held it, the session goes on over a new connection with what it
//! showed the editor kept, and the editor is first shown what it missed: the run's
//! notifications after the latest one it was shown, read with `run/replay`, as the updates
//! they make; when rummy no longer keeps them all (`-32009`), the run's log as `getRun`
//! reads it, against what was shown. Resumed by an agent that never held it, the session is
//! taken as the editor has it: nothing is replayed, and it follows from the run's latest seq.

use std::path::PathBuf;

use agent_client_protocol::v1::schema::{SessionId, SessionUpdate};
use serde_json::{json, Value};

use super::{bind, call_on_run, Connected, Run, Session, Stream};
use crate::acp::commands::Commands;
use crate::acp::error::AcpError;
use crate::acp::options::Catalogue;
use crate::acp::stream::state_of;
use crate::rpc::handlers::runs::HistoryItem;

/// rummy's code for notifications of a run no longer kept.
const NOT_KEPT: i32 = crate::error::code::NOT_KEPT.get() as i32;

impl Session {
    /// `session/resume` of `previous`, a session this agent holds, over `connected`; with the
    /// updates of what the editor missed, to send before the answer.
    pub(in crate::acp) async fn resume(
        previous: &Session,
        connected: Connected,
    ) -> Result<(Session, Vec<SessionUpdate>), AcpError> {
        let link = bind(&connected.link, &previous.root).await?;
        let catalogue = Catalogue::fetch(link).await?;
        let commands = Commands::fetch(link).await?;
        let (tracker, plan, seen) = {
            let mut stream = previous.stream().await;
            (
                std::mem::take(&mut stream.tracker),
                std::mem::take(&mut stream.plan),
                stream.seen,
            )
        };
        let run = Run {
            name: previous.run().to_owned(),
            root: previous.root.clone(),
            model: previous.model(),
            mode: previous.mode(),
            catalogue,
            commands,
        };
        let session = Session::of(run, connected, tracker);
        let missed = {
            let mut stream = session.stream().await;
            stream.plan = plan;
            stream.seen = seen;
            session.catch_up(&mut stream).await?
        };
        Ok((session, missed))
    }

    /// The updates of what the editor missed since the latest notification it was shown.
    async fn catch_up(&self, stream: &mut Stream) -> Result<Vec<SessionUpdate>, AcpError> {
        let params = json!({"run": self.run(), "since": stream.seen});
        let replayed = match self.link.call("run/replay", params).await {
            Ok(replayed) => replayed,
            Err(AcpError::Rpc { code: NOT_KEPT, .. }) => return self.resync(stream).await,
            Err(error) => return Err(error),
        };
        let notifications = replayed
            .get("notifications")
            .and_then(Value::as_array)
            .ok_or_else(|| AcpError::unexpected("run/replay without notifications", &replayed))?;
        let mut updates = Vec::new();
        for notification in notifications {
            let params = &notification["params"];
            if let Some(seq) = params.get("seq").and_then(Value::as_u64) {
                stream.saw(seq);
            }
            if notification["method"] != "run/state" {
                continue;
            }
            if let Some(state) = state_of(params) {
                updates.extend(stream.updates(&state, &self.root));
            }
        }
        Ok(updates)
    }

    /// What the editor missed, from the run's log as `getRun` reads it, and its latest seq.
    async fn resync(&self, stream: &mut Stream) -> Result<Vec<SessionUpdate>, AcpError> {
        let detail = self.link.call("getRun", json!({"run": self.run()})).await?;
        let history: Vec<HistoryItem> =
            serde_json::from_value(detail["context"]["history"].clone())
                .map_err(|_| AcpError::unexpected("getRun without a readable history", &detail))?;
        stream.saw(detail.get("seq").and_then(Value::as_u64).unwrap_or(0));
        Ok(stream.tracker.catch_up(history, &self.root))
    }

    /// `session/resume` of session `id`, which this agent does not hold, in the project at
    /// `root`, over `connected`: its run's log taken as shown, nothing replayed.
    pub(in crate::acp) async fn take_up(
        id: &SessionId,
        root: PathBuf,
        connected: Connected,
        model: Option<String>,
    ) -> Result<Session, AcpError> {
        Ok(Session::load(id, root, connected, model).await?.session)
    }

    /// `session/fork` of session `id` in the project at `root`: a copy of its run
    /// (`run/fork`), as a session of its own over `connected`, named after the copy; the
    /// editor has the log it copies, so nothing is replayed.
    pub(in crate::acp) async fn fork(
        id: &SessionId,
        root: PathBuf,
        connected: Connected,
        model: Option<String>,
    ) -> Result<Session, AcpError> {
        let link = bind(&connected.link, &root).await?;
        let run = id.0.to_string();
        let forked = call_on_run(link, "run/fork", &run, &root).await?;
        let copy = forked
            .get("run")
            .and_then(Value::as_str)
            .ok_or_else(|| AcpError::unexpected("run/fork without a run", &forked))?;
        Session::take_up(&SessionId::new(copy.to_owned()), root, connected, model).await
    }
}
