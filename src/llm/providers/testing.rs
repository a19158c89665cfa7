//! Provider actors for the tests of this module: started on a fresh store with one run,
//! whose every completion is made for that run's first turn.

use std::rc::Rc;

use tokio_util::sync::CancellationToken;

use crate::budget::TokenMath;
use crate::db::enums::CallPurpose;
use crate::db::testing::{sample_run, TestDb};
use crate::db::{ConnectionSetup, DbHandle, DbOptions};
use crate::llm::chat::{ChatRequest, ChatResponse};
use crate::llm::error::LlmError;
use crate::llm::ledger::{CallFor, Ledger};
use crate::llm::settings::LlmOptions;

use super::LlmProviders;
use crate::llm::spending::Spending;

fn ledger(db: &DbHandle) -> Ledger {
    let keyring = crate::secrets::Keyring::parse(
        "test:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
    )
    .unwrap();
    Ledger::new(
        db.clone(),
        std::sync::Arc::new(keyring),
        Default::default(),
        Spending::without_caps(),
        TokenMath::new(4),
    )
}

/// Started providers, the call they make, and the store they record it in.
#[derive(Clone)]
pub(crate) struct TestProviders {
    pub providers: LlmProviders,
    pub call: CallFor,
    pub db: DbHandle,
    _store: Rc<TestDb>,
}

impl TestProviders {
    /// Starts the actors with `settings` (inside an actix system).
    pub(crate) fn start(settings: LlmOptions) -> TestProviders {
        let mut store = TestDb::new();
        let run = sample_run(&mut store.conn).id;
        let db = DbHandle::open(
            &store.store(),
            DbOptions {
                setup: ConnectionSetup::default(),
                writer_limits: crate::hedberg::Limits::default(),
                request_limits: crate::hedberg::Limits::default(),
                readers: 1,
                rpc_log: crate::db::queries::rpc_log::RpcLogBounds::default(),
                entry_changes: None,
                events: crate::db::queries::run_events::EventBounds::default(),
                sent: None,
                work: std::sync::Arc::default(),
            },
        )
        .unwrap();
        let providers = LlmProviders::start(settings, ledger(&db)).unwrap();
        TestProviders {
            providers,
            call: CallFor {
                run,
                loop_id: None,
                turn: 1,
                purpose: CallPurpose::Turn,
            },
            db,
            _store: Rc::new(store),
        }
    }

    /// `LlmProviders::complete` for the test's run.
    pub(crate) async fn complete(
        &self,
        request: ChatRequest,
        cancel: &CancellationToken,
    ) -> Result<ChatResponse, LlmError> {
        self.providers.complete(request, self.call, cancel).await
    }

    /// `LlmProviders::discover_context`.
    pub(crate) async fn discover_context(
        &self,
        actual: &str,
        cancel: &CancellationToken,
    ) -> Result<u32, LlmError> {
        self.providers.discover_context(actual, cancel).await
    }
}
