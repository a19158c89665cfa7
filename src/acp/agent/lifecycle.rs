//! The session methods past a session's start: `session/resume` (what the editor missed,
//! caught up through `run/replay`), `session/fork` (a copy of the session's run) and
//! `session/close` (its prompt cancelled, its connection let go).

use std::path::PathBuf;
use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    CloseSessionRequest, CloseSessionResponse, ForkSessionRequest, ForkSessionResponse,
    ResumeSessionRequest, ResumeSessionResponse, SessionNotification,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::Client;

use super::Bridge;
use crate::acp::error::AcpError;
use crate::acp::mode::Mode;
use crate::acp::session::Session;

impl Bridge {
    /// `session/resume`: the session goes on over a new connection; one this agent holds is
    /// first shown what the editor missed since it was last shown its run, one it does not
    /// hold is taken as the editor has it.
    pub(super) async fn resume_session(
        &self,
        request: ResumeSessionRequest,
        cx: &ConnectionTo<Client>,
    ) -> Result<(ResumeSessionResponse, Arc<Session>), AcpError> {
        let connected = self.dialer.dial(self.endpoint()).await?;
        let held = self.session(&request.session_id).ok();
        let session = match held {
            Some(previous) => {
                let (session, missed) = Session::resume(&previous, connected).await?;
                for update in missed {
                    cx.send_notification(SessionNotification::new(session.id.clone(), update))
                        .map_err(AcpError::protocol)?;
                }
                session
            }
            None => {
                let root = PathBuf::from(&request.cwd);
                Session::take_up(&request.session_id, root, connected, self.model.clone()).await?
            }
        };
        session.attach_mcp(&request.mcp_servers).await;
        let response = ResumeSessionResponse::new()
            .modes(Mode::state(session.mode()))
            .config_options(session.config_options());
        Ok((response, self.keep(session)))
    }

    /// `session/fork`: a copy of the session's run as a new session.
    pub(super) async fn fork_session(
        &self,
        request: ForkSessionRequest,
    ) -> Result<(ForkSessionResponse, Arc<Session>), AcpError> {
        let connected = self.dialer.dial(self.endpoint()).await?;
        let root = PathBuf::from(&request.cwd);
        let session =
            Session::fork(&request.session_id, root, connected, self.model.clone()).await?;
        session.attach_mcp(&request.mcp_servers).await;
        let response = ForkSessionResponse::new(session.id.clone())
            .modes(Mode::state(session.mode()))
            .config_options(session.config_options());
        Ok((response, self.keep(session)))
    }

    /// `session/close`: the session's prompt in flight, if any, cancelled (its run's loop
    /// aborted) and the session let go with its connection; its run stays, to load again.
    pub(super) async fn close_session(
        &self,
        request: &CloseSessionRequest,
    ) -> Result<CloseSessionResponse, AcpError> {
        let session = self.session(&request.session_id)?;
        session.cancel().await?;
        self.sessions
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .remove(&request.session_id);
        Ok(CloseSessionResponse::new())
    }
}
