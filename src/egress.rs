//! rummy's egress proxy for sandboxed commands (issue 44 item 4). A command of a project
//! that allows destinations by host (`sandbox.hosts`, within `RUMMY_SANDBOX_HOSTS`) gets a
//! proxy of its own: a listener on loopback whose port is the only one its sandbox may
//! connect to, reached through `HTTP_PROXY`/`HTTPS_PROXY` with a credential made for that
//! command alone. The proxy refuses (403) any destination the project does not allow,
//! resolves names itself and refuses the server's own networks unless
//! `RUMMY_SANDBOX_ALLOW_NETS` names them ([`NetFilter`]), and where the run's person has a
//! credential for the host it opens the TLS connection itself with a certificate of its CA
//! ([`authority`]) and adds the credential's header to each request, so the command never
//! holds the secret. Other hosts are tunnelled (`CONNECT`) untouched.
//!
//! Nothing of it exists until a command of such a project runs: the CA, the upstream
//! client and the listeners are made on first need.

mod authority;
mod credentials;
pub(crate) mod destination;
mod forward;
mod serve;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::CommandSettings;
use crate::db::ids::{ProjectId, RunId};
use crate::db::DbHandle;
use crate::llm::CancellationToken;
use crate::web::{FilteringResolver, NetFilter};

use authority::Authority;
pub(crate) use credentials::{sealed_value, HostCredential, HostCredentials};
pub(crate) use destination::Destination;

/// The user name in the proxy URL (its password is the command's own credential).
const PROXY_USER: &str = "rummy";
/// The CA certificate's file in a command's scratch directory.
pub(crate) const CA_FILE: &str = "rummy-egress-ca.pem";
/// The variables that point a command's HTTP clients at the proxy.
const PROXY_VARIABLES: &[&str] = &["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"];
/// The variables that name the file of CA certificates a command's TLS clients trust.
const CA_VARIABLES: &[&str] = &[
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "GIT_SSL_CAINFO",
    "CURL_CA_BUNDLE",
];

/// Why the proxy could not be set up or serve.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EgressError {
    #[error("{what}: {source}")]
    Io {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("the egress CA: {0}")]
    Ca(#[from] rcgen::Error),
    #[error("the egress proxy's TLS: {0}")]
    Tls(#[from] tokio_rustls::rustls::Error),
    #[error("a certificate: {0}")]
    Certificate(String),
    #[error("drawing a proxy credential: {0}")]
    Random(getrandom::Error),
    #[error("the egress proxy's upstream client: {0}")]
    Client(#[from] reqwest::Error),
}

impl EgressError {
    /// Maps an I/O error to one saying what was being done.
    fn io(what: &'static str) -> impl FnOnce(std::io::Error) -> EgressError {
        move |source| EgressError::Io { what, source }
    }
}

/// People's host credentials from the sealed store (`hostCredentials/set`).
pub(crate) fn sealed_credentials(store: crate::secrets::SecretStore) -> Arc<dyn HostCredentials> {
    Arc::new(credentials::SealedCredentials { store })
}

/// What one command may do through the proxy, and on whose behalf.
#[derive(Debug, Clone)]
pub(crate) struct Grant {
    pub project: ProjectId,
    pub run: RunId,
    /// The run's person, whose credentials the proxy adds (`None`: the operator, who has
    /// none).
    pub person: Option<String>,
    pub destinations: Vec<Destination>,
}

/// The server's egress proxy: its CA, its upstream client, where credentials come from.
pub(crate) struct Egress {
    authority: Authority,
    client: reqwest::Client,
    filter: Arc<NetFilter>,
    credentials: Arc<dyn HostCredentials>,
    db: DbHandle,
}

/// One command's proxy, open until this is dropped.
pub(crate) struct Opened {
    pub port: u16,
    token: String,
    _stop: tokio_util::sync::DropGuard,
}

impl Egress {
    /// The proxy for `settings`, its CA kept in `home/egress` (blocking: reads or makes the
    /// CA).
    pub(crate) fn new(
        settings: &CommandSettings,
        home: &Path,
        credentials: Arc<dyn HostCredentials>,
        db: DbHandle,
    ) -> Result<Egress, EgressError> {
        let authority = Authority::load_or_make(&home.join("egress"))?;
        let filter = Arc::new(NetFilter::new(settings.allow_nets.clone()));
        let mut client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .dns_resolver(Arc::new(FilteringResolver {
                filter: Arc::clone(&filter),
            }));
        if let Some(path) = &settings.upstream_ca {
            let pem = std::fs::read(path)
                .map_err(EgressError::io("reading RUMMY_SANDBOX_UPSTREAM_CA"))?;
            for certificate in reqwest::Certificate::from_pem_bundle(&pem)? {
                client = client.add_root_certificate(certificate);
            }
        }
        Ok(Egress {
            authority,
            client: client.build()?,
            filter,
            credentials,
            db,
        })
    }

    /// Opens a proxy for one command under `grant`: a listener on loopback, served until
    /// the returned [`Opened`] is dropped.
    pub(crate) async fn open(self: &Arc<Self>, grant: Grant) -> Result<Opened, EgressError> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(EgressError::io("opening the egress proxy"))?;
        let port = listener
            .local_addr()
            .map_err(EgressError::io("opening the egress proxy"))?
            .port();
        let token = crate::random::random_hex(24).map_err(EgressError::Random)?;
        let stop = CancellationToken::new();
        let session = serve::Session::new(Arc::clone(self), grant, &token);
        tokio::spawn(serve::accept(listener, session, stop.clone()));
        Ok(Opened {
            port,
            token,
            _stop: stop.drop_guard(),
        })
    }
}

impl Opened {
    /// The variables that send the command's HTTP clients through this proxy and make
    /// them trust its CA, whose certificate is at `ca_file`.
    pub(crate) fn env(&self, ca_file: &Path) -> BTreeMap<String, String> {
        let url = format!("http://{PROXY_USER}:{}@127.0.0.1:{}", self.token, self.port);
        let ca = ca_file.display().to_string();
        PROXY_VARIABLES
            .iter()
            .map(|name| ((*name).to_owned(), url.clone()))
            .chain(["NO_PROXY", "no_proxy"].map(|name| (name.to_owned(), String::new())))
            .chain(
                CA_VARIABLES
                    .iter()
                    .map(|name| ((*name).to_owned(), ca.clone())),
            )
            .collect()
    }
}

/// The egress proxy of a server, made on the first command that needs it.
pub(crate) struct LazyEgress {
    settings: CommandSettings,
    home: PathBuf,
    db: DbHandle,
    credentials: Arc<dyn HostCredentials>,
    made: tokio::sync::OnceCell<Result<Arc<Egress>, String>>,
}

impl LazyEgress {
    pub(crate) fn new(
        settings: CommandSettings,
        home: PathBuf,
        db: DbHandle,
        credentials: Arc<dyn HostCredentials>,
    ) -> LazyEgress {
        LazyEgress {
            settings,
            home,
            db,
            credentials,
            made: tokio::sync::OnceCell::new(),
        }
    }

    /// Opens a proxy for a command of `run` in `project` that may reach `destinations`,
    /// its CA certificate written in `scratch` (the command's scratch directory), on
    /// behalf of the person who started the run. `Err` says why it could not.
    pub(crate) async fn open(
        &self,
        project: ProjectId,
        run: RunId,
        destinations: Vec<Destination>,
        scratch: &Path,
    ) -> Result<(Opened, PathBuf), String> {
        let egress = self.egress().await?;
        let person = self
            .db
            .read(move |conn| crate::db::queries::runs::get_run(conn, run))
            .await
            .map_err(|error| error.to_string())?
            .and_then(|row| row.created_by);
        let opened = egress
            .open(Grant {
                project,
                run,
                person,
                destinations,
            })
            .await
            .map_err(|error| error.to_string())?;
        let ca_file = scratch.join(CA_FILE);
        tokio::fs::write(&ca_file, egress.authority.certificate())
            .await
            .map_err(|error| format!("cannot write the egress CA certificate: {error}"))?;
        Ok((opened, ca_file))
    }

    async fn egress(&self) -> Result<Arc<Egress>, String> {
        self.made
            .get_or_init(|| async {
                let (settings, home) = (self.settings.clone(), self.home.clone());
                let (credentials, db) = (Arc::clone(&self.credentials), self.db.clone());
                tokio::task::spawn_blocking(move || {
                    Egress::new(&settings, &home, credentials, db)
                        .map(Arc::new)
                        .map_err(|error| error.to_string())
                })
                .await
                .map_err(|error| error.to_string())
                .and_then(|made| made)
            })
            .await
            .clone()
    }
}
