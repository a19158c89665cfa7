//! `getPeople`: who the users file lets in, for the admins' page of the console.

use serde::Serialize;

use crate::access::Role;
use crate::error::AppError;
use crate::rpc::call::{CallContext, Reply};
use crate::rpc::params::NoParams;

/// One person as `getPeople` shows them: what the users file says of them but their token.
#[derive(Serialize)]
struct PersonItem {
    name: String,
    role: Role,
    /// The project names and globs they may open, as the file gives them.
    projects: Vec<String>,
}

/// `getPeople`: the people of the users file (none without one), in its order.
pub(crate) async fn list(context: CallContext, _: NoParams) -> Result<Reply, AppError> {
    let people = context.access.people();
    let items: Vec<PersonItem> = people
        .iter()
        .map(|person| PersonItem {
            name: person.name.to_string(),
            role: person.role,
            projects: person.patterns().to_vec(),
        })
        .collect();
    Reply::of(items)
}
