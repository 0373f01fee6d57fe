//! The Lua libraries Redis loads (cjson, cmsgpack, bit, struct) against a real redis-server.
//!
//! Every case in `scripting_libs/cases.txt` is a Lua snippet; `scripting_libs/record.py` ran it
//! (after `prelude.lua`) as `EVAL <script> 0` on redis-server 7 and wrote the reply on the
//! case's `=>` line. Here the same script runs in a fresh Lua 5.1 state with our libraries
//! registered, loaded under Redis's chunk name so error positions read `user_script:N:` too.

use mlua::Lua;

struct Case {
    name: String,
    snippet: String,
    expected: String,
}

/// Blank-line separated blocks: `# name`, the snippet lines, then `=> reply`.
fn cases() -> Vec<Case> {
    let text = include_str!("scripting_libs/cases.txt");
    let mut cases = Vec::new();
    for block in text.split("\n\n") {
        let lines: Vec<&str> = block.lines().filter(|l| !l.is_empty()).collect();
        let Some(name) = lines.first().and_then(|l| l.strip_prefix("# ")) else {
            continue;
        };
        let Some(expected) = lines.iter().find_map(|l| l.strip_prefix("=> ")) else {
            continue;
        };
        let snippet: Vec<&str> = lines[1..]
            .iter()
            .copied()
            .filter(|l| !l.starts_with("=> "))
            .collect();
        cases.push(Case {
            name: name.to_string(),
            snippet: snippet.join("\n"),
            expected: expected.to_string(),
        });
    }
    cases
}

/// Runs one script as Redis would run it, rendering the reply as record.py does (bytes as
/// latin-1 characters).
fn run(script: &str) -> String {
    let lua = Lua::new();
    stmd::scripting::libs::register(&lua).expect("register the libraries");
    // record.py sent the script's characters as latin-1 bytes; do the same.
    let bytes: Vec<u8> = script.chars().map(|c| c as u32 as u8).collect();
    match lua
        .load(&bytes[..])
        .set_name("@user_script")
        .eval::<mlua::String>()
    {
        Ok(reply) => reply.as_bytes().iter().map(|&b| b as char).collect(),
        Err(error) => format!("ERROR {error}"),
    }
}

/// Cases where stmd answers differently on purpose: (case, stmd's answer, why).
const KNOWN_DIFFERENCES: &[(&str, &str, &str)] = &[(
    "encode depth past the Lua stack",
    r#""true 10002" "false "Cannot serialise, excessive nesting (1202)"""#,
    "objects nested past ~1200 levels (only with encode_max_depth raised) would exhaust mlua's \
     reference slots, so they are refused before lua-cjson's 4000",
)];

#[test]
fn libraries_match_redis() {
    let prelude = include_str!("scripting_libs/prelude.lua");
    let cases = cases();
    assert!(cases.len() > 100, "only {} cases parsed", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let got = run(&format!("{prelude}{}", case.snippet));
        let expected = KNOWN_DIFFERENCES
            .iter()
            .find(|(name, _, _)| *name == case.name)
            .map_or(case.expected.as_str(), |(_, ours, _)| *ours);
        if got != expected {
            failures.push(format!(
                "{}\n  redis: {}\n  stmd:  {}",
                case.name, case.expected, got
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from redis-server:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// Errors raised inside the libraries are plain Lua strings, as in Redis, so a script can
/// handle them (`pcall`) and Redis can put them in its error reply.
#[test]
fn library_errors_are_lua_strings() {
    let lua = Lua::new();
    stmd::scripting::libs::register(&lua).expect("register");
    let kinds: String = lua
        .load(
            "local a = select(2, pcall(cjson.decode, '[')) \
             local b = select(2, pcall(struct.pack, 'z')) \
             local c = select(2, pcall(cmsgpack.unpack, '\\129\\192\\1')) \
             return type(a) .. type(b) .. type(c)",
        )
        .eval()
        .expect("run");
    assert_eq!(kinds, "stringstringstring");
}

/// Hostile input ends in an error or a value, never in a crash: random bytes through every
/// decoder, and deep or self-referencing tables through every encoder.
#[test]
fn hostile_input_is_refused_cleanly() {
    let lua = Lua::new();
    stmd::scripting::libs::register(&lua).expect("register");
    let outcome: i64 = lua
        .load(
            r#"
            local seed = 12345
            local function byte() seed = (seed * 1103515245 + 12345) % 2147483648 return seed % 256 end
            local count = 0
            for round = 1, 3000 do
                local t = {}
                for i = 1, round % 40 do t[i] = string.char(byte()) end
                local s = table.concat(t)
                for _, f in ipairs({cjson.decode, cmsgpack.unpack, function(x) return struct.unpack(x, x) end,
                                    function(x) return cmsgpack.unpack_limit(x, 3, 1) end}) do
                    if pcall(f, s) then count = count + 1 end
                end
            end
            local deep = {} deep[1] = deep deep.x = deep
            for _, f in ipairs({cjson.encode, cmsgpack.pack}) do
                if pcall(f, deep) then count = count + 1 end
            end
            return count
            "#,
        )
        .eval()
        .expect("run");
    assert!(outcome > 0);
}
