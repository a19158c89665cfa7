//! Whose key pays for a model call: its run's starter's own key for the call's provider
//! when they have one (`keys/set`, sealed in `secrets`), else the server's, unless the
//! project requires people's own keys (`keys/required`): then the call stops before any
//! request with an error saying whose key is missing. Ollama takes no key: its calls always
//! go as the server's.

use super::error::LlmError;
use super::route::ProviderKind;
use super::spending::KeyOnFile;
use crate::secrets::{Binding, Keyring, SecretString, PROVIDER_KEY};

/// Whose key a call carries.
pub(crate) enum Payer {
    /// The server's key for the provider (or none, for a provider that takes none).
    Server,
    /// `person`'s own.
    Person { person: String, key: SecretString },
}

impl Payer {
    /// The key to send instead of the server's.
    pub(super) fn key(&self) -> Option<&SecretString> {
        match self {
            Payer::Server => None,
            Payer::Person { key, .. } => Some(key),
        }
    }

    /// The person whose key it is; `None`: the server's.
    pub(super) fn person(&self) -> Option<String> {
        match self {
            Payer::Server => None,
            Payer::Person { person, .. } => Some(person.clone()),
        }
    }
}

/// Who pays for a call to `provider`, by what the store held at its admission.
pub(super) fn payer(
    keyring: &Keyring,
    provider: ProviderKind,
    on_file: KeyOnFile,
) -> Result<Payer, LlmError> {
    if provider == ProviderKind::Ollama {
        return Ok(Payer::Server);
    }
    let refused = |message: String| LlmError::NotConfigured { provider, message };
    match (on_file.person, on_file.sealed) {
        (Some(person), Some(sealed)) => {
            let binding = Binding {
                person: &person,
                kind: PROVIDER_KEY,
                name: provider.slug(),
            };
            match keyring.open(binding, &sealed) {
                Ok(key) => Ok(Payer::Person { person, key }),
                Err(error) => Err(refused(format!(
                    "{person}'s own {} key cannot be used: {error}",
                    provider.slug()
                ))),
            }
        }
        (person, _) if on_file.required => Err(refused(format!(
            "this project requires each person's own provider key, and {} has none for {}: \
             add one with keys/set (the console's Keys page)",
            person.as_deref().unwrap_or("the operator"),
            provider.slug()
        ))),
        _ => Ok(Payer::Server),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secrets::ExposeSecret;

    const HEX_A: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

    fn keyring() -> Keyring {
        Keyring::parse(&format!("a:{HEX_A}")).unwrap()
    }

    fn on_file(person: Option<&str>, required: bool, key: Option<&str>) -> KeyOnFile {
        let keyring = keyring();
        KeyOnFile {
            person: person.map(str::to_owned),
            required,
            sealed: key.map(|key| {
                let binding = Binding {
                    person: person.unwrap_or(""),
                    kind: PROVIDER_KEY,
                    name: "openai",
                };
                keyring
                    .seal(binding, &SecretString::from(key.to_owned()))
                    .unwrap()
            }),
        }
    }

    #[test]
    fn a_person_with_a_key_pays_and_one_without_falls_back_unless_required() {
        let keyring = keyring();
        let ada = payer(
            &keyring,
            ProviderKind::OpenAi,
            on_file(Some("ada"), true, Some("sk-ada")),
        )
        .unwrap();
        assert_eq!(ada.person().as_deref(), Some("ada"));
        assert_eq!(ada.key().unwrap().expose_secret(), "sk-ada");
        let bob = payer(
            &keyring,
            ProviderKind::OpenAi,
            on_file(Some("bob"), false, None),
        )
        .unwrap();
        assert!(bob.person().is_none() && bob.key().is_none());
        let error = payer(
            &keyring,
            ProviderKind::OpenAi,
            on_file(Some("bob"), true, None),
        )
        .err()
        .unwrap()
        .to_string();
        assert!(error.contains("bob has none for openai"), "{error}");
        let operator = payer(&keyring, ProviderKind::OpenAi, on_file(None, true, None))
            .err()
            .unwrap()
            .to_string();
        assert!(operator.contains("the operator"), "{operator}");
        let ollama = payer(
            &keyring,
            ProviderKind::Ollama,
            on_file(Some("bob"), true, None),
        );
        assert!(ollama.unwrap().key().is_none());
    }

    #[test]
    fn a_key_that_does_not_open_stops_the_call() {
        let keyring = keyring();
        let mut moved = on_file(Some("ada"), false, Some("sk-ada"));
        moved.person = Some("bob".into());
        let error = payer(&keyring, ProviderKind::OpenAi, moved)
            .err()
            .unwrap()
            .to_string();
        assert!(
            error.contains("bob's own openai key cannot be used"),
            "{error}"
        );
    }
}
