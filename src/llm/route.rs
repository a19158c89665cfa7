//! Provider selection: which provider serves a catalogue `actual` string, and under which
//! model name (PROTOCOL.md Part B §5.2).

use std::fmt;

/// The provider families rummy talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderKind {
    /// Any OpenAI-compatible server (llama.cpp, vLLM, ...): prefix `openai/`.
    OpenAi,
    /// Ollama through its OpenAI-compatible endpoint: prefix `ollama/`.
    Ollama,
    /// OpenRouter: every `actual` without a known prefix.
    OpenRouter,
    /// xAI's Responses API: prefix `x.ai/`.
    Xai,
}

impl ProviderKind {
    /// Every provider, in a fixed order.
    pub const ALL: [ProviderKind; 4] = [
        ProviderKind::OpenAi,
        ProviderKind::Ollama,
        ProviderKind::OpenRouter,
        ProviderKind::Xai,
    ];

    /// The name used in error messages, as the reference words them.
    pub fn label(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "OpenAI-compatible",
            ProviderKind::Ollama => "Ollama",
            ProviderKind::OpenRouter => "OpenRouter",
            ProviderKind::Xai => "xAI",
        }
    }

    /// The short lower-case name used in tracing fields.
    pub fn slug(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::Ollama => "ollama",
            ProviderKind::OpenRouter => "openrouter",
            ProviderKind::Xai => "xai",
        }
    }

    /// The provider its [`slug`](Self::slug) names.
    pub fn from_slug(slug: &str) -> Option<ProviderKind> {
        ProviderKind::ALL
            .into_iter()
            .find(|provider| provider.slug() == slug)
    }

    /// What a catalogue `actual` string starts with to be routed here (OpenRouter: nothing).
    pub fn prefix(self) -> &'static str {
        PREFIXES
            .iter()
            .find(|(_, provider)| *provider == self)
            .map_or("", |(prefix, _)| prefix)
    }

    /// What to check when the provider refuses our credentials.
    pub fn credentials_hint(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "OPENAI_API_KEY",
            ProviderKind::Ollama => "the access settings of the Ollama server",
            ProviderKind::OpenRouter => "OPENROUTER_API_KEY",
            ProviderKind::Xai => "XAI_API_KEY",
        }
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.label())
    }
}

/// A provider and the model name it is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Route {
    /// The provider that serves the model.
    pub provider: ProviderKind,
    /// The model name in the provider's own terms.
    pub model: String,
}

const PREFIXES: [(&str, ProviderKind); 3] = [
    ("ollama/", ProviderKind::Ollama),
    ("openai/", ProviderKind::OpenAi),
    ("x.ai/", ProviderKind::Xai),
];

impl Route {
    /// Routes a catalogue `actual` string: `ollama/`, `openai/` and `x.ai/` lose their prefix;
    /// anything else (`openrouter/auto` included) goes to OpenRouter unchanged.
    pub(crate) fn from_actual(actual: &str) -> Route {
        for (prefix, provider) in PREFIXES {
            if let Some(model) = actual.strip_prefix(prefix) {
                return Route {
                    provider,
                    model: model.to_owned(),
                };
            }
        }
        Route {
            provider: ProviderKind::OpenRouter,
            model: actual.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_prefixes_are_stripped() {
        let cases = [
            ("ollama/qwen3:8b", ProviderKind::Ollama, "qwen3:8b"),
            ("openai/gpt-oss", ProviderKind::OpenAi, "gpt-oss"),
            ("x.ai/grok-4", ProviderKind::Xai, "grok-4"),
        ];
        for (actual, provider, model) in cases {
            let route = Route::from_actual(actual);
            assert_eq!(route.provider, provider, "{actual}");
            assert_eq!(route.model, model, "{actual}");
        }
    }

    #[test]
    fn everything_else_goes_to_openrouter_unchanged() {
        for actual in [
            "anthropic/claude-sonnet-4",
            "openrouter/auto",
            "",
            "xai/grok",
            "OLLAMA/x",
        ] {
            let route = Route::from_actual(actual);
            assert_eq!(route.provider, ProviderKind::OpenRouter, "{actual}");
            assert_eq!(route.model, actual);
        }
    }

    #[test]
    fn a_prefix_routes_back_to_its_provider() {
        for provider in ProviderKind::ALL {
            assert_eq!(ProviderKind::from_slug(provider.slug()), Some(provider));
            let actual = format!("{}m", provider.prefix());
            assert_eq!(Route::from_actual(&actual).provider, provider, "{actual}");
        }
        assert_eq!(ProviderKind::from_slug("anthropic"), None);
    }

    #[test]
    fn only_the_leading_prefix_counts() {
        let route = Route::from_actual("meta/ollama/llama");
        assert_eq!(route.provider, ProviderKind::OpenRouter);
        assert_eq!(route.model, "meta/ollama/llama");
    }
}
