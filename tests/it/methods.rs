//! The foundation methods that are not about one run's lifecycle: `ping`, `discover`,
//! `init`, the model catalogue, `get`/`store`/`getEntries`, skills and personas, and the
//! errors for ill-typed params.

mod documents;
mod entries;
mod models;
mod params;
mod session;
