//! The dx-lang integration tests, one module per subject, linked into one test binary: each
//! binary links the whole compiler and engine (hundreds of megabytes unoptimised), so one
//! binary instead of nine keeps the build's disk use and link time down.

mod common;

mod ad_properties;
mod bot;
mod bot_snapshots;
mod custom_derivs;
mod effects;
mod fused;
mod monoid;
mod prim_derivatives;
mod session;
mod stdlib;
mod tidy;
mod user_types;
mod wording;
