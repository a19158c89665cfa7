//! The ACP side: the handlers of the editor's requests on stdin/stdout. `initialize`
//! answers at once; `session/new` opens a connection to rummy and binds it to the project;
//! `session/prompt` runs in a task of its own (so that `session/cancel` and the answers to
//! this agent's own requests keep arriving) and answers when its turn ends; between
//! prompts a session shows what its idle run is told (`acp::idle`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AuthMethod, AuthMethodAgent, AuthenticateRequest, AuthenticateResponse,
    CancelNotification, CloseSessionRequest, ForkSessionRequest, Implementation, InitializeRequest,
    InitializeResponse, ListSessionsRequest, ListSessionsResponse, LoadSessionRequest,
    LoadSessionResponse, McpCapabilities, NewSessionRequest, NewSessionResponse,
    PromptCapabilities, PromptRequest, PromptResponse, ResumeSessionRequest, SessionCapabilities,
    SessionCloseCapabilities, SessionForkCapabilities, SessionId, SessionListCapabilities,
    SessionNotification, SessionResumeCapabilities, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse, SetSessionModeRequest, SetSessionModeResponse,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{
    on_receive_notification, on_receive_request, Agent, Client, JsonRpcResponse, Protocol,
    Responder, Stdio,
};

use crate::acp::error::AcpError;
use crate::acp::link::{Dialer, Endpoint};
use crate::acp::mode::Mode;
use crate::acp::permission::Offers;
use crate::acp::session::{self, Loaded, Session};
use crate::acp::turn;

mod lifecycle;

/// The one authentication method offered: the token read from the token file.
const TOKEN_FILE: &str = "token-file";

/// What every handler shares.
pub(super) struct Bridge {
    /// Replaced by `authenticate` with the token it read.
    endpoint: Mutex<Arc<Endpoint>>,
    dialer: Dialer,
    /// The model prompts run with; `None`: the catalogue's first.
    model: Option<String>,
    offers: Mutex<Offers>,
    sessions: Mutex<HashMap<SessionId, Arc<Session>>>,
}

impl Bridge {
    pub(super) fn new(endpoint: Endpoint, dialer: Dialer, model: Option<String>) -> Bridge {
        Bridge {
            endpoint: Mutex::new(Arc::new(endpoint)),
            dialer,
            model,
            offers: Mutex::new(Offers::default()),
            sessions: Mutex::new(HashMap::new()),
        }
    }

    /// `initialize`: protocol version 1 (the one this agent speaks, whatever the editor
    /// asked: it disconnects if it cannot speak it), and what this agent takes.
    fn initialize(&self, request: &InitializeRequest) -> InitializeResponse {
        let fs = &request.client_capabilities.fs;
        *self
            .offers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Offers {
            write_files: fs.write_text_file,
            terminal: request.client_capabilities.terminal,
            forms: request
                .client_capabilities
                .elicitation
                .as_ref()
                .is_some_and(|elicitation| elicitation.supports_form()),
        };
        InitializeResponse::new(ProtocolVersion::V1)
            .agent_capabilities(
                AgentCapabilities::new()
                    .load_session(true)
                    .mcp_capabilities(McpCapabilities::new().http(true))
                    .prompt_capabilities(PromptCapabilities::new().embedded_context(true))
                    .session_capabilities(
                        SessionCapabilities::new()
                            .list(SessionListCapabilities::new())
                            .resume(SessionResumeCapabilities::new())
                            .close(SessionCloseCapabilities::new())
                            .fork(SessionForkCapabilities::new()),
                    ),
            )
            .auth_methods(self.auth_methods())
            .agent_info(Implementation::new("rummy", env!("CARGO_PKG_VERSION")))
    }

    fn endpoint(&self) -> Arc<Endpoint> {
        Arc::clone(
            &self
                .endpoint
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        )
    }

    /// A remote server: signing in reads the token from the token file (a first one, or
    /// another when the server refuses the one given).
    fn auth_methods(&self) -> Vec<AuthMethod> {
        match &self.endpoint().token_file {
            Some(file) => {
                vec![AuthMethod::Agent(
                    AuthMethodAgent::new(TOKEN_FILE, "rummy token").description(format!(
                        "Put your rummy token (from the server's admin) on the first line of \
                         {}, then sign in",
                        file.display()
                    )),
                )]
            }
            _ => Vec::new(),
        }
    }

    /// `authenticate`: reads the token file, checks the token by connecting with it, and
    /// keeps it for the sessions to come.
    async fn authenticate(
        &self,
        request: &AuthenticateRequest,
    ) -> Result<AuthenticateResponse, AcpError> {
        if &*request.method_id.0 != TOKEN_FILE {
            return Err(AcpError::UnknownAuthMethod(request.method_id.0.to_string()));
        }
        let current = self.endpoint();
        let Some(file) = current.token_file.clone() else {
            return Err(AcpError::UnknownAuthMethod(request.method_id.0.to_string()));
        };
        let token = crate::acp::read_token_file(&file)?.ok_or_else(|| AcpError::TokenFile {
            file: file.display().to_string(),
            reason: "it is missing or its first line is empty".into(),
        })?;
        let endpoint = Arc::new(Endpoint {
            url: current.url.clone(),
            token: Some(token),
            token_file: Some(file),
        });
        let connected = self.dialer.dial(Arc::clone(&endpoint)).await?;
        connected.link.call("ping", serde_json::json!({})).await?;
        *self
            .endpoint
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = endpoint;
        Ok(AuthenticateResponse::new())
    }

    fn offers(&self) -> Offers {
        *self
            .offers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// `session/new`: the project at `cwd` and a new run, through a connection of the
    /// session's own; the session is named after the run.
    async fn new_session(
        &self,
        request: NewSessionRequest,
    ) -> Result<(NewSessionResponse, Arc<Session>), AcpError> {
        let connected = self.dialer.dial(self.endpoint()).await?;
        let root = PathBuf::from(&request.cwd);
        let session = Session::open(root, connected, self.model.clone()).await?;
        session.attach_mcp(&request.mcp_servers).await;
        let id = session.id.clone();
        let modes = Mode::state(session.mode());
        let response = NewSessionResponse::new(id)
            .modes(modes)
            .config_options(session.config_options());
        Ok((response, self.keep(session)))
    }

    /// `session/load`: the project at `cwd` and its run named by the session id, whose log
    /// is sent to the editor before the answer.
    async fn load_session(
        &self,
        request: LoadSessionRequest,
        cx: &ConnectionTo<Client>,
    ) -> Result<(LoadSessionResponse, Arc<Session>), AcpError> {
        let connected = self.dialer.dial(self.endpoint()).await?;
        let root = PathBuf::from(&request.cwd);
        let Loaded { session, replay } =
            Session::load(&request.session_id, root, connected, self.model.clone()).await?;
        session.attach_mcp(&request.mcp_servers).await;
        for update in replay {
            cx.send_notification(SessionNotification::new(session.id.clone(), update))
                .map_err(AcpError::protocol)?;
        }
        let modes = Mode::state(session.mode());
        let response = LoadSessionResponse::new()
            .modes(modes)
            .config_options(session.config_options());
        Ok((response, self.keep(session)))
    }

    /// `session/list`: the runs of the project at `cwd`.
    async fn list_sessions(
        &self,
        request: ListSessionsRequest,
    ) -> Result<ListSessionsResponse, AcpError> {
        let root = request.cwd.ok_or(AcpError::ListWithoutDirectory)?;
        let connected = self.dialer.dial(self.endpoint()).await?;
        let (sessions, next) = session::list(&root, connected, request.cursor.as_deref()).await?;
        Ok(ListSessionsResponse::new(sessions).next_cursor(next))
    }

    /// Keeps `session` for the requests that name it (a session loaded again replaces the
    /// one it was).
    fn keep(&self, session: Session) -> Arc<Session> {
        let session = Arc::new(session);
        self.sessions
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(session.id.clone(), Arc::clone(&session));
        session
    }

    fn session(&self, id: &SessionId) -> Result<Arc<Session>, AcpError> {
        self.sessions
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(id)
            .cloned()
            .ok_or_else(|| AcpError::UnknownSession(id.0.to_string()))
    }

    /// `session/set_mode`.
    fn set_mode(
        &self,
        request: &SetSessionModeRequest,
    ) -> Result<SetSessionModeResponse, AcpError> {
        let session = self.session(&request.session_id)?;
        session.set_mode(Mode::parse(&request.mode_id.0)?);
        Ok(SetSessionModeResponse::new())
    }

    /// `session/set_config_option`: answered with the session's options as they are now.
    fn set_config_option(
        &self,
        request: &SetSessionConfigOptionRequest,
    ) -> Result<SetSessionConfigOptionResponse, AcpError> {
        let session = self.session(&request.session_id)?;
        session.choose(&request.config_id.0, &request.value)?;
        Ok(SetSessionConfigOptionResponse::new(
            session.config_options(),
        ))
    }

    /// `session/cancel`: cancels the session's prompt in flight (its own loops of the run); a
    /// notification has no answer, so what goes wrong is logged.
    async fn cancel(&self, notification: &CancelNotification) {
        match self.session(&notification.session_id) {
            Ok(session) => {
                if let Err(error) = session.cancel().await {
                    tracing::warn!(%error, "cannot cancel the session's prompt");
                }
            }
            Err(error) => tracing::warn!(%error, "session/cancel"),
        }
    }
}

/// `session/prompt`: the turn runs in a task of its own, which answers when it ends.
fn start_prompt<P: Protocol>(
    bridge: &Bridge,
    request: PromptRequest,
    responder: Responder<PromptResponse, P>,
    cx: ConnectionTo<Client>,
) -> Result<(), agent_client_protocol::Error> {
    let session = match bridge.session(&request.session_id) {
        Ok(session) => session,
        Err(error) => return responder.respond_with_error(error.into()),
    };
    let offers = bridge.offers();
    let in_flight = session.begin();
    let turn_cx = cx.clone();
    cx.spawn(async move {
        let ended = turn::prompt(in_flight, &turn_cx, offers, &request.prompt).await;
        session.between_prompts(&turn_cx);
        if let Err(error) = &ended {
            tracing::warn!(%error, "a prompt turn failed");
        }
        responder.respond_with_result(ended.map(PromptResponse::new).map_err(Into::into))
    })
}

/// Answers a request that made or loaded a session, then tells the editor the session's
/// slash commands (once it knows the session), and shows what its run is told until its
/// first prompt (`acp::idle`).
fn answer_and_offer_commands<T: JsonRpcResponse, P: Protocol>(
    responder: Responder<T, P>,
    cx: &ConnectionTo<Client>,
    result: Result<(T, Arc<Session>), AcpError>,
) -> Result<(), agent_client_protocol::Error> {
    let (response, session) = match result {
        Ok(answered) => answered,
        Err(error) => return responder.respond_with_error(error.into()),
    };
    responder.respond(response)?;
    cx.send_notification(SessionNotification::new(
        session.id.clone(),
        session.commands(),
    ))?;
    session.between_prompts(cx);
    Ok(())
}

/// Serves the editor on stdin/stdout until it closes stdin.
pub(super) async fn serve(bridge: Arc<Bridge>) -> Result<(), AcpError> {
    let on_initialize = Arc::clone(&bridge);
    let on_authenticate = Arc::clone(&bridge);
    let on_new = Arc::clone(&bridge);
    let on_load = Arc::clone(&bridge);
    let on_list = Arc::clone(&bridge);
    let on_resume = Arc::clone(&bridge);
    let on_fork = Arc::clone(&bridge);
    let on_close = Arc::clone(&bridge);
    let on_prompt = Arc::clone(&bridge);
    let on_mode = Arc::clone(&bridge);
    let on_option = Arc::clone(&bridge);
    let on_cancel = bridge;
    Agent
        .v1()
        .name("rummy")
        .on_receive_request(
            async move |request: InitializeRequest, responder, _cx| {
                responder.respond(on_initialize.initialize(&request))
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: AuthenticateRequest, responder, _cx| {
                let signed_in = on_authenticate.authenticate(&request).await;
                responder.respond_with_result(signed_in.map_err(Into::into))
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest, responder, cx| {
                let opened = on_new.new_session(request).await;
                answer_and_offer_commands(responder, &cx, opened)
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest, responder, cx| {
                let loaded = on_load.load_session(request, &cx).await;
                answer_and_offer_commands(responder, &cx, loaded)
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ResumeSessionRequest, responder, cx| {
                let resumed = on_resume.resume_session(request, &cx).await;
                answer_and_offer_commands(responder, &cx, resumed)
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ForkSessionRequest, responder, cx| {
                let forked = on_fork.fork_session(request).await;
                answer_and_offer_commands(responder, &cx, forked)
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: CloseSessionRequest, responder, _cx| {
                let closed = on_close.close_session(&request).await;
                responder.respond_with_result(closed.map_err(Into::into))
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ListSessionsRequest, responder, _cx| {
                let listed = on_list.list_sessions(request).await;
                responder.respond_with_result(listed.map_err(Into::into))
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest, responder, cx| {
                start_prompt(&on_prompt, request, responder, cx)
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionModeRequest, responder, _cx| {
                responder.respond_with_result(on_mode.set_mode(&request).map_err(Into::into))
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionConfigOptionRequest, responder, _cx| {
                let set = on_option.set_config_option(&request);
                responder.respond_with_result(set.map_err(Into::into))
            },
            on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: CancelNotification, _cx| {
                on_cancel.cancel(&notification).await;
                Ok(())
            },
            on_receive_notification!(),
        )
        .connect_to(Stdio::new())
        .await
        .map_err(AcpError::protocol)
}
