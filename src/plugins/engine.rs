//! The engine that runs the plugins: the registry every plugin registers into
//! ([`registry::Plugins`]: tools, sections, hooks, methods), the dispatch of a reply's or a
//! client's commands through the tools' halves behind the write gate ([`dispatch`]), the
//! tools added while the server runs ([`live`]), the
//! resolution of proposals ([`resolve`]) and the readonly files no tool may change
//! ([`readonly`]).

pub(crate) mod changed_files;
pub(crate) mod dispatch;
pub(crate) mod live;
pub(crate) mod readonly;
pub(crate) mod registry;
pub(crate) mod resolve;
