//! Sign-in to the console through an OpenID Connect provider (`console::oidc`): the
//! provider, this server's client at it, which claims name a person and their groups, and
//! what each group grants. Off (and free) while `issuer` is empty.

use std::path::PathBuf;

use serde::Deserialize;

use super::{ConfigError, Secret, ServerSettings};
use crate::access::Role;

/// The `[oidc]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OidcSettings {
    /// The provider's issuer URL (its discovery document is at
    /// `<issuer>/.well-known/openid-configuration`); empty: no such sign-in.
    pub issuer: String,
    /// This server's client id at the provider.
    pub client_id: String,
    /// The client secret itself (prefer `client_secret_file`); never logged.
    #[serde(deserialize_with = "super::optional_secret")]
    pub client_secret: Option<Secret>,
    /// A file holding the client secret (its first line), relative to `RUMMY_HOME`.
    #[serde(deserialize_with = "super::optional_path")]
    pub client_secret_file: Option<PathBuf>,
    /// Where the provider sends the browser back; empty: the public URL, the console's
    /// path and `/oidc/callback`.
    pub redirect_url: String,
    /// Shown as "Sign in with <name>".
    pub provider_name: String,
    /// The ID token's claim that names a person (a name as in the users file).
    pub name_claim: String,
    /// The ID token's claim that lists a person's groups (strings).
    pub groups_claim: String,
    /// What each group grants; a person gets the highest role and every project of their
    /// groups here, and nothing without one.
    pub groups: Vec<GroupGrant>,
    /// The provider and this server's client at it, checked, with the secret read
    /// ([`Settings::load`](super::Settings::load) sets it); `None`: not configured.
    #[serde(skip)]
    pub client: Option<OidcClient>,
}

impl Default for OidcSettings {
    fn default() -> OidcSettings {
        OidcSettings {
            issuer: String::new(),
            client_id: String::new(),
            client_secret: None,
            client_secret_file: None,
            redirect_url: String::new(),
            provider_name: "your identity provider".to_owned(),
            name_claim: "preferred_username".to_owned(),
            groups_claim: "groups".to_owned(),
            groups: Vec::new(),
            client: None,
        }
    }
}

/// One `[[oidc.groups]]` table: the people of `group` get at least `role` and `projects`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupGrant {
    pub group: String,
    pub role: Role,
    /// Project names or globs, as in the users file; `"*"` is every project.
    #[serde(default)]
    pub projects: Vec<String>,
}

/// What a configured sign-in needs, checked at start.
#[derive(Debug, Clone)]
pub struct OidcClient {
    pub issuer: String,
    pub client_id: String,
    pub client_secret: Secret,
    pub redirect_url: String,
}

impl OidcSettings {
    /// Whether sign-in through a provider is configured.
    pub fn enabled(&self) -> bool {
        !self.issuer.trim().is_empty()
    }

    /// The provider, the client and where it comes back to, with the secret read from its
    /// file when given there (blocking; at start). `None` when not configured.
    pub(super) fn checked_client(
        &self,
        server: &ServerSettings,
        home: &std::path::Path,
    ) -> Result<Option<OidcClient>, ConfigError> {
        if !self.enabled() {
            return Ok(None);
        }
        let invalid = |why: String| ConfigError::Invalid(format!("oidc: {why}"));
        let issuer = self.issuer.trim().trim_end_matches('/').to_owned();
        if !url::Url::parse(&issuer).is_ok_and(|url| matches!(url.scheme(), "http" | "https")) {
            return Err(invalid(format!(
                "RUMMY_OIDC_ISSUER must be an http or https URL (got {issuer:?})"
            )));
        }
        if self.client_id.trim().is_empty() {
            return Err(invalid("RUMMY_OIDC_CLIENT_ID is not set".into()));
        }
        let client_secret = match (&self.client_secret, &self.client_secret_file) {
            (Some(_), Some(_)) => {
                return Err(invalid(
                    "set RUMMY_OIDC_CLIENT_SECRET or RUMMY_OIDC_CLIENT_SECRET_FILE, not both"
                        .into(),
                ))
            }
            (Some(secret), None) => secret.clone(),
            (None, Some(path)) => {
                let path = home.join(path);
                let text = std::fs::read_to_string(&path)
                    .map_err(|error| invalid(format!("{}: {error}", path.display())))?;
                let line = text.lines().next().unwrap_or("").trim();
                if line.is_empty() {
                    return Err(invalid(format!("{} is empty", path.display())));
                }
                Secret::new(line.to_owned())
            }
            (None, None) => {
                return Err(invalid(
                    "RUMMY_OIDC_CLIENT_SECRET_FILE (or RUMMY_OIDC_CLIENT_SECRET) is not set".into(),
                ))
            }
        };
        let redirect_url =
            match self.redirect_url.trim() {
                "" if server.public_url.trim().is_empty() => return Err(invalid(
                    "set RUMMY_PUBLIC_URL (or RUMMY_OIDC_REDIRECT_URL): the provider must know \
                     where to send the browser back"
                        .into(),
                )),
                "" => format!(
                    "{}{}/oidc/callback",
                    server.public_url.trim(),
                    server.console_path
                ),
                given => given.to_owned(),
            };
        if url::Url::parse(&redirect_url).is_err() {
            return Err(invalid(format!(
                "the redirect URL {redirect_url:?} is not a URL"
            )));
        }
        for grant in &self.groups {
            crate::project::patterns::ProjectPatterns::new(grant.projects.clone())
                .map_err(|why| invalid(format!("group {:?}: {why}", grant.group)))?;
        }
        Ok(Some(OidcClient {
            issuer,
            client_id: self.client_id.trim().to_owned(),
            client_secret,
            redirect_url,
        }))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::path::Path;

    use super::super::Settings;

    fn load(home: &Path, pairs: &[(&str, &str)]) -> Result<Settings, String> {
        let mut env: HashMap<String, String> =
            [("RUMMY_HOME".to_owned(), home.display().to_string())].into();
        env.extend(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        Settings::load(&env, Path::new("config")).map_err(|error| error.to_string())
    }

    #[test]
    fn without_an_issuer_there_is_no_provider() {
        let home = tempfile::tempdir().unwrap();
        let settings = load(home.path(), &[("RUMMY_OIDC_CLIENT_ID", "x")]).unwrap();
        assert!(settings.oidc.client.is_none());
    }

    #[test]
    fn a_provider_needs_a_client_a_secret_and_a_way_back() {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join("secret"), "s3cret\nignored\n").unwrap();
        let issuer = ("RUMMY_OIDC_ISSUER", "https://sso.example.com/realms/acme/");
        let id = ("RUMMY_OIDC_CLIENT_ID", "rummy");
        let file = ("RUMMY_OIDC_CLIENT_SECRET_FILE", "secret");
        let public = ("RUMMY_PUBLIC_URL", "https://rummy.example.com");
        let settings = load(home.path(), &[issuer, id, file, public]).unwrap();
        let client = settings.oidc.client.unwrap();
        assert_eq!(client.issuer, "https://sso.example.com/realms/acme");
        assert_eq!(client.client_id, "rummy");
        assert_eq!(client.client_secret.expose(), "s3cret");
        assert_eq!(
            client.redirect_url,
            "https://rummy.example.com/ui/oidc/callback"
        );
        assert!(
            !format!("{client:?}").contains("s3cret"),
            "never in debug output"
        );
        let path = ("RUMMY_CONSOLE_PATH", "/console");
        let moved = load(home.path(), &[issuer, id, file, public, path]).unwrap();
        assert_eq!(
            moved.oidc.client.unwrap().redirect_url,
            "https://rummy.example.com/console/oidc/callback"
        );
        let given = (
            "RUMMY_OIDC_REDIRECT_URL",
            "https://elsewhere.example.com/cb",
        );
        let env_secret = ("RUMMY_OIDC_CLIENT_SECRET", "from-env");
        let direct = load(home.path(), &[issuer, id, env_secret, given]).unwrap();
        let client = direct.oidc.client.unwrap();
        assert_eq!(client.redirect_url, "https://elsewhere.example.com/cb");
        assert_eq!(client.client_secret.expose(), "from-env");

        for (pairs, said) in [
            (vec![issuer, file, public], "RUMMY_OIDC_CLIENT_ID"),
            (vec![issuer, id, public], "RUMMY_OIDC_CLIENT_SECRET_FILE"),
            (vec![issuer, id, file, env_secret, public], "not both"),
            (vec![issuer, id, file], "RUMMY_PUBLIC_URL"),
            (
                vec![("RUMMY_OIDC_ISSUER", "sso.example.com"), id, file, public],
                "http or https URL",
            ),
            (
                vec![
                    issuer,
                    id,
                    ("RUMMY_OIDC_CLIENT_SECRET_FILE", "absent"),
                    public,
                ],
                "absent",
            ),
        ] {
            let error = load(home.path(), &pairs).unwrap_err();
            assert!(error.contains(said), "{pairs:?}: {error}");
            assert!(
                !error.contains("s3cret") && !error.contains("from-env"),
                "{error}"
            );
        }
    }

    #[test]
    fn the_groups_are_read_from_a_config_file_and_their_patterns_checked() {
        let home = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("team.toml"),
            "[oidc]\nprovider_name = \"Acme SSO\"\nname_claim = \"email\"\n\
             groups_claim = \"roles\"\n\
             [[oidc.groups]]\ngroup = \"devs\"\nrole = \"member\"\nprojects = [\"web\"]\n",
        )
        .unwrap();
        let mut env: HashMap<String, String> = [
            ("RUMMY_HOME", home.path().to_str().unwrap()),
            ("RUMMY_ENV", "team"),
            ("RUMMY_OIDC_ISSUER", "https://sso.example.com"),
            ("RUMMY_OIDC_CLIENT_ID", "rummy"),
            ("RUMMY_OIDC_CLIENT_SECRET", "x"),
            ("RUMMY_PUBLIC_URL", "https://rummy.example.com"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let settings = Settings::load(&env, dir.path()).unwrap();
        assert_eq!(settings.oidc.provider_name, "Acme SSO");
        assert_eq!(settings.oidc.name_claim, "email");
        assert_eq!(settings.oidc.groups_claim, "roles");
        assert_eq!(settings.oidc.groups.len(), 1);
        assert_eq!(settings.oidc.groups[0].role, crate::access::Role::Member);
        std::fs::write(
            dir.path().join("team.toml"),
            "[[oidc.groups]]\ngroup = \"devs\"\nrole = \"member\"\nprojects = [\"[\"]\n",
        )
        .unwrap();
        let error = Settings::load(&env, dir.path()).unwrap_err().to_string();
        assert!(error.contains("group \"devs\""), "{error}");
        env.remove("RUMMY_OIDC_ISSUER");
        assert!(
            Settings::load(&env, dir.path()).is_ok(),
            "unchecked while off"
        );
    }
}
