//! ctxbudget's Rust core: token estimation, text validation, selection and pairing checks.
//!
//! The core modules are plain Rust and never touch `PyO3`; the Python bindings live in
//! `py.rs` behind the `python` feature, which maturin enables.

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
pub mod batch;
pub mod blocks;
mod conservative;
pub mod estimate;
mod greedy;
mod nfc;
pub mod pairing;
mod pin;
pub mod profiles;
pub mod scan;
pub mod select;
pub mod stream;
pub mod text;
pub mod units;
pub mod vocab;
mod window_cost;
mod window_hits;

#[cfg(test)]
mod testing;

#[cfg(feature = "python")]
mod py;
#[cfg(feature = "python")]
mod py_anthropic;
#[cfg(feature = "python")]
mod py_chat;
#[cfg(feature = "python")]
mod py_dict_versions;
#[cfg(feature = "python")]
mod py_gemini;
#[cfg(feature = "python")]
mod py_json;
#[cfg(feature = "python")]
mod py_prefix;
#[cfg(feature = "python")]
mod py_read;
#[cfg(feature = "python")]
mod py_responses;
#[cfg(feature = "python")]
mod py_same;
#[cfg(feature = "python")]
mod py_stream;
#[cfg(feature = "python")]
mod py_weigh;
