//! No Docker engine runs here, so this checks what can be checked without one: every `STMD_*`
//! setting the Dockerfile and docker-compose.yml use is a real one, with a value stmd accepts, and
//! the Dockerfile keeps the promises of docs/operations.md (non-root, port, health check, data volume).

use clap::{CommandFactory, Parser};
use regex::Regex;
use std::path::Path;
use stmd::config::Config;

fn read(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(name))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// `(variable, value)` pairs: `ENV STMD_X=v` in the Dockerfile, `STMD_X: v` in compose.
fn assignments(text: &str) -> Vec<(String, String)> {
    let re = Regex::new(r"(STMD_[A-Z0-9_]+)(?:=|: )([^\s\\]+)").expect("regex");
    re.captures_iter(text)
        .map(|c| (c[1].to_string(), c[2].to_string()))
        .collect()
}

/// The long flag of the setting read from `var`.
fn flag_for(var: &str) -> Option<String> {
    Config::command().get_arguments().find_map(|arg| {
        let env = arg.get_env()?;
        (env == var).then(|| arg.get_long().map(str::to_string))?
    })
}

fn check_settings(file: &str) -> usize {
    let text = read(file);
    let names = Regex::new(r"STMD_[A-Z0-9_]+").expect("regex");
    for name in names.find_iter(&text) {
        assert!(
            flag_for(name.as_str()).is_some(),
            "{file} uses {}, which stmd does not read",
            name.as_str()
        );
    }
    let pairs = assignments(&text);
    let mut argv = vec!["stmd".to_string()];
    for (var, value) in &pairs {
        if value.contains("${") {
            continue; // filled in by compose from the operator's environment
        }
        argv.push(format!("--{}", flag_for(var).unwrap_or_default()));
        argv.push(value.clone());
    }
    if let Err(err) = Config::try_parse_from(&argv) {
        panic!("{file}: stmd rejects {argv:?}: {err}");
    }
    pairs.len()
}

#[test]
fn dockerfile_settings_exist_and_parse() {
    assert!(check_settings("Dockerfile") >= 3);
    let docker = read("Dockerfile");
    assert_eq!(docker.matches("\nFROM ").count(), 2, "multi-stage");
    for line in [
        "EXPOSE 6379",
        "USER stmd",
        "VOLUME [\"/data\"]",
        "ENTRYPOINT [\"stmd\"]",
    ] {
        assert!(docker.contains(line), "Dockerfile lacks {line}");
    }
    assert!(docker.contains("HEALTHCHECK"));
    // Whatever the build stage copies must exist.
    let copy = Regex::new(r"(?m)^COPY ([a-z]+) \./").expect("regex");
    for dir in copy.captures_iter(&docker) {
        assert!(
            Path::new(env!("CARGO_MANIFEST_DIR")).join(&dir[1]).is_dir(),
            "COPY {} but no such directory",
            &dir[1]
        );
    }
}

#[test]
fn compose_settings_exist_and_parse() {
    assert!(check_settings("docker-compose.yml") >= 4);
    let compose = read("docker-compose.yml");
    assert!(compose.contains("image: postgres:16"));
    assert!(compose.contains("STMD_DATABASE_URL: postgres://"));
    // Published on the host's loopback only.
    let published = Regex::new(r#"- "([^"]+):\d+:\d+""#).expect("regex");
    let hosts: Vec<String> = published
        .captures_iter(&compose)
        .map(|c| c[1].to_string())
        .collect();
    assert!(!hosts.is_empty());
    assert!(hosts.iter().all(|h| h == "127.0.0.1"), "{hosts:?}");
}

#[test]
fn a_setting_stmd_does_not_know_is_caught() {
    assert!(flag_for("STMD_NO_SUCH_THING").is_none());
    assert_eq!(flag_for("STMD_DIR").as_deref(), Some("dir"));
    assert_eq!(
        assignments("ENV STMD_BIND=0.0.0.0 \\\n    STMD_DIR=/data"),
        [
            ("STMD_BIND".to_string(), "0.0.0.0".to_string()),
            ("STMD_DIR".to_string(), "/data".to_string())
        ]
    );
}
