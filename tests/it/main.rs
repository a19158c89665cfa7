//! The integration test binary: real servers on 127.0.0.1 port 0, real HTTP clients.

mod fake_llm;
