//! Placeholder for the libraries Redis loads into every script state (`cjson`, `cmsgpack`, `bit`,
//! `struct`); the `lualibs` branch replaces this file with the real ones.

/// Sets the library globals on a fresh script state.
pub fn register(_lua: &mlua::Lua) -> mlua::Result<()> {
    Ok(())
}
