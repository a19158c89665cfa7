//! Whole-packet tests: the observed packets of AGENT §2.4 under this project's decisions.
