//! [`Clients`]: how a plugin reaches the clients bound to a project (`ui/render`,
//! `ui/notify`), through the same per-project hubs as the run notifications. A plugin gets
//! the handle when it registers, before the server's hubs exist; the composition root
//! connects it once they do ([`Clients::connect`]), and until then nothing is sent.

use std::sync::{Arc, OnceLock};

use crate::db::ids::ProjectId;
use crate::hub::notifications::{NotifyLevel, UiNotification, UiNotify, UiRender};
use crate::hub::HubRegistry;

/// The clients of every project, as plugins see them. Cheap to clone.
#[derive(Clone, Default)]
pub struct Clients {
    hubs: Arc<OnceLock<HubRegistry>>,
}

impl Clients {
    /// From now on, sends through `hubs` (the first call wins).
    pub fn connect(&self, hubs: HubRegistry) {
        if self.hubs.set(hubs).is_err() {
            tracing::warn!("plugin clients already connected");
        }
    }

    /// `ui/render {text, append}` to every client bound to `project`.
    pub fn render(&self, project: ProjectId, text: impl Into<String>, append: bool) {
        self.send(
            project,
            UiNotification::Render(UiRender {
                text: text.into(),
                append,
            }),
        );
    }

    /// `ui/notify {text, level}` to every client bound to `project`.
    pub fn notify(&self, project: ProjectId, text: impl Into<String>, level: NotifyLevel) {
        self.send(
            project,
            UiNotification::Notify(UiNotify {
                text: text.into(),
                level,
            }),
        );
    }

    fn send(&self, project: ProjectId, notification: UiNotification) {
        match self.hubs.get() {
            Some(hubs) => hubs.broadcast(project, notification),
            None => tracing::debug!(
                method = notification.method(),
                "no clients connected yet; notification dropped"
            ),
        }
    }
}
