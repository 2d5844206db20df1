//! Integration tests live in `tests/`; see the README.
