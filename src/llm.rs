//! LLM providers: OpenAI-compatible, Ollama, OpenRouter and xAI clients behind one trait.
