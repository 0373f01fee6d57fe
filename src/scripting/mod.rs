//! Lua scripting. This module holds the libraries Redis loads into every script state.

pub mod libs;
