//! Admins' changes to `$RUMMY_HOME/mcp.toml` (`mcp/add`, `mcp/remove`): made to the file's
//! text as TOML keeps it (`toml_edit`: every comment, key order and blank line stays where
//! it was; a removed server's table goes with the comments above it), read back as an MCP
//! file before anything is written (a change the file could not hold is refused and the
//! file stays as it was), and written atomically (`access::write_atomically`).

use std::collections::BTreeMap;

use toml_edit::{Array, ArrayOfTables, DocumentMut, InlineTable, Item, Table};

use super::config::{self, PersonalEntry, ServerConfig, FILE_NAME};
use crate::config::Secret;

/// Why a change to `mcp.toml` is refused.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EditError {
    #[error("{0}")]
    Refused(String),
    #[error("{name} is already a server of mcp.toml")]
    Exists { name: String },
    #[error("{name} is not a server of mcp.toml")]
    NoSuchServer { name: String },
}

/// A server to add, with the fields a `[[server]]` table takes (`None`: the file's default).
#[derive(Debug, Clone, Default)]
pub(crate) struct NewServer {
    pub name: String,
    pub command: Option<String>,
    pub args: Vec<String>,
    pub env: BTreeMap<String, Secret>,
    pub url: Option<String>,
    pub headers: BTreeMap<String, Secret>,
    pub trusted: Option<bool>,
    pub timeout_secs: Option<u64>,
    pub max_output_bytes: Option<u64>,
    pub projects: Option<Vec<String>>,
    pub personal: Option<PersonalEntry>,
}

/// The file's text with `server` added as a `[[server]]` table at its end, and the server
/// as it reads.
pub(crate) fn added(text: &str, server: &NewServer) -> Result<(String, ServerConfig), EditError> {
    let mut document = document(text)?;
    let servers = servers_of(&mut document)?;
    if position(servers, &server.name).is_some() {
        return Err(EditError::Exists {
            name: server.name.clone(),
        });
    }
    let mut table = Table::new();
    table.insert("name", toml_edit::value(server.name.as_str()));
    if let Some(command) = &server.command {
        table.insert("command", toml_edit::value(command.as_str()));
    }
    if !server.args.is_empty() {
        let args: Array = server.args.iter().map(String::as_str).collect();
        table.insert("args", toml_edit::value(args));
    }
    if !server.env.is_empty() {
        table.insert("env", toml_edit::value(secrets(&server.env)));
    }
    if let Some(url) = &server.url {
        table.insert("url", toml_edit::value(url.as_str()));
    }
    if !server.headers.is_empty() {
        table.insert("headers", toml_edit::value(secrets(&server.headers)));
    }
    if let Some(trusted) = server.trusted {
        table.insert("trusted", toml_edit::value(trusted));
    }
    for (key, number) in [
        ("timeout_secs", server.timeout_secs),
        ("max_output_bytes", server.max_output_bytes),
    ] {
        if let Some(number) = number {
            let number = i64::try_from(number)
                .map_err(|_| EditError::Refused(format!("{key} is too large")))?;
            table.insert(key, toml_edit::value(number));
        }
    }
    if let Some(projects) = &server.projects {
        let projects: Array = projects.iter().map(String::as_str).collect();
        table.insert("projects", toml_edit::value(projects));
    }
    if let Some(personal) = &server.personal {
        let mut written = InlineTable::new();
        let fields = [
            ("header", &personal.header),
            ("prefix", &personal.prefix),
            ("env", &personal.env),
        ];
        for (key, field) in fields {
            if let Some(field) = field {
                written.insert(key, field.as_str().into());
            }
        }
        table.insert("personal", toml_edit::value(written));
    }
    let first = servers.is_empty();
    servers.push(table);
    if first {
        // A file of comments only keeps them in its trailing part, which would come after
        // the new table: they head the file, above it.
        let comments = document.trailing().as_str().unwrap_or_default().to_owned();
        if !comments.trim().is_empty() {
            document.set_trailing("");
            if let Some(table) = servers_of(&mut document)?.get_mut(0) {
                table
                    .decor_mut()
                    .set_prefix(format!("{}\n\n", comments.trim_end()));
            }
        }
    }
    let text = document.to_string();
    let config = read_back(&text)?
        .into_iter()
        .find(|config| config.name == server.name)
        .ok_or_else(|| EditError::Refused(format!("{} does not read back", server.name)))?;
    Ok((text, config))
}

/// The file's text without the server `name` (enabled or not).
pub(crate) fn removed(text: &str, name: &str) -> Result<String, EditError> {
    let mut document = document(text)?;
    let servers = servers_of(&mut document)?;
    let index = position(servers, name).ok_or_else(|| EditError::NoSuchServer {
        name: name.to_owned(),
    })?;
    let kept = servers
        .get(index)
        .and_then(|table| table.decor().prefix())
        .and_then(|prefix| prefix.as_str())
        .map(file_comments)
        .unwrap_or_default();
    servers.remove(index);
    if let Some(next) = servers.get_mut(index) {
        let own = next
            .decor()
            .prefix()
            .and_then(|prefix| prefix.as_str())
            .unwrap_or_default()
            .to_owned();
        next.decor_mut().set_prefix(format!("{kept}{own}"));
    } else if !kept.is_empty() {
        let trailing = document.trailing().as_str().unwrap_or_default().to_owned();
        document.set_trailing(format!("{}\n{trailing}", kept.trim_end()));
    }
    let text = document.to_string();
    read_back(&text)?;
    Ok(text)
}

/// What of a removed table's leading comments belongs to the file rather than to it: all
/// up to its last blank line (the table's own comments are those right above it).
fn file_comments(prefix: &str) -> String {
    prefix
        .rfind("\n\n")
        .map(|end| prefix[..end + 2].to_owned())
        .unwrap_or_default()
}

fn document(text: &str) -> Result<DocumentMut, EditError> {
    text.parse()
        .map_err(|error| EditError::Refused(format!("{FILE_NAME} does not read: {error}")))
}

/// The `[[server]]` tables (made when the file has none yet).
fn servers_of(document: &mut DocumentMut) -> Result<&mut ArrayOfTables, EditError> {
    document
        .entry("server")
        .or_insert_with(|| Item::ArrayOfTables(ArrayOfTables::new()))
        .as_array_of_tables_mut()
        .ok_or_else(|| {
            EditError::Refused(format!(
                "{FILE_NAME} lists its servers otherwise than as [[server]] tables; change it \
                 by hand"
            ))
        })
}

fn position(servers: &ArrayOfTables, name: &str) -> Option<usize> {
    servers
        .iter()
        .position(|table| table.get("name").and_then(Item::as_str) == Some(name))
}

/// `{ KEY = "value" }` of secrets (written to the file, never shown elsewhere).
fn secrets(values: &BTreeMap<String, Secret>) -> InlineTable {
    values
        .iter()
        .map(|(key, value)| (key.as_str(), toml_edit::Value::from(value.expose())))
        .collect()
}

/// The servers `text` declares, or why it would not read (the file's own reason, which
/// quotes no value).
fn read_back(text: &str) -> Result<Vec<ServerConfig>, EditError> {
    config::parse(text, FILE_NAME).map_err(|error| EditError::Refused(error.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str =
        "# Our servers.\n\n# The glossary, on stdio.\n[[server]]\nname = \"glossary\"  # ours\n\
        command = \"python3\"\nargs = [\"-u\", \"g.py\"]\n\n# Docs, over HTTP.\n[[server]]\n\
        name = \"docs\"\nurl = \"http://127.0.0.1:9/mcp\"\n";

    fn web_server() -> NewServer {
        NewServer {
            name: "web".into(),
            command: Some("web-mcp".into()),
            args: vec!["stdio".into()],
            env: [("TOKEN".to_owned(), Secret::new("s3cret".into()))].into(),
            projects: Some(vec!["web".into(), "api-*".into()]),
            timeout_secs: Some(5),
            ..NewServer::default()
        }
    }

    #[test]
    fn an_added_server_goes_at_the_end_and_every_comment_stays() {
        let (text, config) = added(FILE, &web_server()).unwrap();
        assert!(text.starts_with(FILE), "{text}");
        assert!(text.contains("env = { TOKEN = \"s3cret\" }"), "{text}");
        assert_eq!(config.tag(), "mcp_web");
        assert_eq!(config.timeout_secs, 5);
        assert!(config.serves("api-v2") && !config.serves("shop"));
        let text = removed(&text, "glossary").unwrap();
        assert!(!text.contains("The glossary"), "its comment goes: {text}");
        assert!(text.starts_with("# Our servers.\n"), "{text}");
        assert!(text.contains("# Docs, over HTTP.\n[[server]]\nname = \"docs\""));
        assert_eq!(read_back(&text).unwrap().len(), 2);
    }

    #[test]
    fn a_server_the_file_could_not_hold_is_refused_saying_why() {
        let refused = |server: NewServer| added(FILE, &server).unwrap_err().to_string();
        let named = |name: &str| NewServer {
            name: name.into(),
            ..web_server()
        };
        assert_eq!(
            refused(named("docs")),
            "docs is already a server of mcp.toml"
        );
        assert!(refused(named("Bad-Name")).contains("name must be"));
        let both = NewServer {
            url: Some("http://h".into()),
            ..web_server()
        };
        assert!(refused(both).contains("either command"));
        let neither = NewServer {
            command: None,
            ..web_server()
        };
        assert!(refused(neither).contains("either command"));
        let pattern = NewServer {
            projects: Some(vec!["a[".into()]),
            ..web_server()
        };
        let why = refused(pattern);
        assert!(!why.contains("s3cret"), "{why}");
        assert_eq!(
            removed(FILE, "nope").unwrap_err().to_string(),
            "nope is not a server of mcp.toml"
        );
        assert!(added("server = 1\n", &web_server()).is_err());
    }

    #[test]
    fn a_personal_server_is_written_as_it_reads_and_one_its_transport_cannot_take_is_refused() {
        let personal = |entry: PersonalEntry| NewServer {
            personal: Some(entry),
            ..web_server()
        };
        let by_env = PersonalEntry {
            env: Some("WEB_TOKEN".into()),
            ..PersonalEntry::default()
        };
        let (text, config) = added(FILE, &personal(by_env)).unwrap();
        assert!(
            text.contains("personal = { env = \"WEB_TOKEN\" }"),
            "{text}"
        );
        assert_eq!(
            config.personal,
            Some(config::Personal::Env {
                name: "WEB_TOKEN".into()
            })
        );
        let by_header = PersonalEntry {
            header: Some("Authorization".into()),
            prefix: Some("Bearer ".into()),
            env: None,
        };
        let why = added(FILE, &personal(by_header)).unwrap_err().to_string();
        assert!(why.contains("{ env } for a command"), "{why}");
    }

    #[test]
    fn the_first_server_makes_the_file_or_goes_below_its_comments() {
        let (text, _) = added("", &web_server()).unwrap();
        assert!(text.starts_with("[[server]]\nname = \"web\""), "{text}");
        let comments = "# Our servers.\n# None yet.\n";
        let (text, _) = added(comments, &web_server()).unwrap();
        assert!(
            text.starts_with("# Our servers.\n# None yet.\n\n[[server]]\n"),
            "{text}"
        );
        assert_eq!(removed(&text, "web").unwrap(), comments);
    }
}
