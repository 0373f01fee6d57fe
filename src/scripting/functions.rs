//! Redis 7 functions: libraries of named Lua functions loaded with FUNCTION LOAD and called with
//! FCALL. The libraries live in the engine's one Lua state next to the script cache.
//!
//! The set is kept as `(name, code)` pairs plus what each code registered, so FUNCTION DUMP can
//! list the codes ([`Functions::codes`]) and FUNCTION RESTORE can load a list of codes at once
//! with a FLUSH, APPEND or REPLACE policy ([`super::Engine::restore_functions`]): nothing changes
//! unless every library of the list loads.

use super::engine::ScriptFlags;
use bytes::Bytes;
use std::collections::{BTreeMap, HashMap};

/// The flags `redis.register_function` accepts, in the order FUNCTION LIST shows them.
pub const FUNCTION_FLAGS: &[&str] = &[
    "no-writes",
    "allow-oom",
    "allow-stale",
    "no-cluster",
    "allow-cross-slot-keys",
];

/// One registered function.
#[derive(Clone)]
pub struct LibraryFunction {
    pub name: String,
    pub description: Option<String>,
    /// As given to `register_function`, shown by FUNCTION LIST.
    pub flag_names: Vec<String>,
    pub flags: ScriptFlags,
    pub callback: mlua::Function,
}

/// One library: its code as loaded and the functions it registered, in registration order.
#[derive(Clone)]
pub struct Library {
    pub name: String,
    pub code: Bytes,
    pub functions: Vec<LibraryFunction>,
}

/// How FUNCTION RESTORE treats the libraries already loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RestorePolicy {
    /// Drop every library first.
    Flush,
    /// Add to them; a library name already there fails the whole restore.
    Append,
    /// Add to them; a library of the same name is replaced.
    Replace,
}

/// Every loaded library, by name, and which library owns each function name.
#[derive(Clone, Default)]
pub struct Functions {
    libraries: BTreeMap<String, Library>,
    owners: HashMap<String, String>,
    code_bytes: usize,
}

impl Functions {
    /// Adds `library`; with `replace`, a library of the same name goes first. Redis's errors
    /// for a name already taken, and nothing changes then.
    pub fn insert(&mut self, library: Library, replace: bool) -> Result<(), String> {
        if self.libraries.contains_key(&library.name) && !replace {
            return Err(format!("ERR Library '{}' already exists", library.name));
        }
        for function in &library.functions {
            if let Some(owner) = self.owners.get(&function.name) {
                if *owner != library.name {
                    return Err(format!("ERR Function {} already exists", function.name));
                }
            }
        }
        self.remove(&library.name);
        for function in &library.functions {
            self.owners
                .insert(function.name.clone(), library.name.clone());
        }
        self.code_bytes += library.code.len();
        self.libraries.insert(library.name.clone(), library);
        Ok(())
    }

    /// FUNCTION DELETE: false when there is no such library.
    pub fn remove(&mut self, name: &str) -> bool {
        let Some(library) = self.libraries.remove(name) else {
            return false;
        };
        for function in &library.functions {
            self.owners.remove(&function.name);
        }
        self.code_bytes -= library.code.len();
        true
    }

    pub fn clear(&mut self) {
        *self = Functions::default();
    }

    /// The function called `name` (FCALL).
    pub fn get(&self, name: &str) -> Option<&LibraryFunction> {
        let library = self.libraries.get(self.owners.get(name)?)?;
        library.functions.iter().find(|f| f.name == name)
    }

    pub fn libraries(&self) -> impl Iterator<Item = &Library> {
        self.libraries.values()
    }

    /// Every library's code, for FUNCTION DUMP and snapshots.
    pub fn codes(&self) -> Vec<Bytes> {
        self.libraries.values().map(|l| l.code.clone()).collect()
    }

    pub fn library_count(&self) -> usize {
        self.libraries.len()
    }

    pub fn function_count(&self) -> usize {
        self.owners.len()
    }

    /// Bytes of code and bookkeeping, for INFO's `used_memory_functions`.
    pub fn memory(&self) -> usize {
        self.code_bytes + self.libraries.len() * 128 + self.owners.len() * 160
    }
}

/// The library name from a `#!lua name=<lib>` first line, with Redis's errors.
pub fn library_name(code: &[u8]) -> Result<String, String> {
    let line_end = code.iter().position(|&b| b == b'\n').unwrap_or(code.len());
    let Some(line) = code[..line_end].strip_prefix(b"#!") else {
        return Err("ERR Missing library metadata".into());
    };
    let line = String::from_utf8_lossy(line);
    let mut parts = line.split(' ').filter(|p| !p.is_empty());
    let engine = parts.next().unwrap_or_default();
    if !engine.eq_ignore_ascii_case("lua") {
        return Err(format!("ERR Engine '{engine}' not found"));
    }
    let mut name = None;
    for part in parts {
        match part.strip_prefix("name=") {
            Some(_) if name.is_some() => {
                return Err(
                    "ERR Invalid metadata value, name argument was given multiple times".into(),
                )
            }
            Some(value) => name = Some(value.to_string()),
            None => return Err(format!("ERR Invalid metadata value given: {part}")),
        }
    }
    let name = name.ok_or("ERR Library name was not given")?;
    if !valid_name(&name) {
        return Err("ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long".into());
    }
    Ok(name)
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The flags of a function from its `register_function` list (already checked in Lua).
pub fn function_flags(names: &[String]) -> ScriptFlags {
    let has = |flag: &str| names.iter().any(|n| n == flag);
    ScriptFlags {
        shebang: true,
        no_writes: has("no-writes"),
        allow_oom: has("allow-oom"),
        no_cluster: has("no-cluster"),
        allow_cross_slot_keys: has("allow-cross-slot-keys"),
        allow_stale: has("allow-stale"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_metadata_errors_match_redis() {
        assert_eq!(library_name(b"#!lua name=lib1\nreturn").unwrap(), "lib1");
        assert_eq!(library_name(b"#!LUA name=a_1").unwrap(), "a_1");
        let err = |code: &[u8]| library_name(code).unwrap_err();
        assert_eq!(err(b"return 1"), "ERR Missing library metadata");
        assert_eq!(err(b"#!lua\n"), "ERR Library name was not given");
        assert_eq!(err(b"#!lua2 name=x"), "ERR Engine 'lua2' not found");
        assert_eq!(
            err(b"#!lua name=x foo=bar"),
            "ERR Invalid metadata value given: foo=bar"
        );
        assert_eq!(
            err(b"#!lua name=a name=b"),
            "ERR Invalid metadata value, name argument was given multiple times"
        );
        assert!(err(b"#!lua name=x-y").starts_with("ERR Library names can only contain"));
        assert!(err(b"#!lua name=").starts_with("ERR Library names can only contain"));
    }
}
