//! The append-only files' layout, as Redis 7's multi-part AOF: in `dir/appenddirname`, a base
//! (`<name>.<seq>.base.rdb`, the dataset at a rewrite), the increments written since
//! (`<name>.<seq>.incr.aof`, commands in RESP) and `<name>.manifest`, which lists them:
//!
//! ```text
//! file appendonly.aof.2.base.rdb seq 2 type b
//! file appendonly.aof.2.incr.aof seq 2 type i
//! ```
//!
//! The manifest is replaced whole (written beside, synced, renamed), so the set of files it names
//! is always one that loads.

use std::io::Write;
use std::path::{Path, PathBuf};

/// One file the manifest names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Part {
    pub name: String,
    pub seq: u64,
}

/// The files that make up the append-only log, in load order: the base, then the increments.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Manifest {
    pub base: Option<Part>,
    pub incrs: Vec<Part>,
}

const INVALID: &str = "Invalid AOF manifest file format";

impl Manifest {
    /// Reads a manifest's text; `type h` (history, left by an interrupted clean-up) lines are
    /// skipped, as Redis does when it loads.
    pub fn parse(text: &str) -> Result<Manifest, String> {
        let mut manifest = Manifest::default();
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let words: Vec<&str> = line.split_ascii_whitespace().collect();
            if words.len() % 2 != 0 {
                return Err(INVALID.into());
            }
            let field = |key: &str| {
                words
                    .chunks(2)
                    .find(|pair| pair[0] == key)
                    .map(|pair| pair[1])
            };
            let (Some(name), Some(seq), Some(kind)) = (field("file"), field("seq"), field("type"))
            else {
                return Err(INVALID.into());
            };
            if name.contains('/') || name.starts_with('"') {
                return Err(INVALID.into());
            }
            let seq: u64 = seq.parse().map_err(|_| INVALID.to_string())?;
            let part = Part {
                name: name.to_string(),
                seq,
            };
            match kind {
                "b" if manifest.base.is_none() => manifest.base = Some(part),
                "b" => return Err("Found duplicate base file information".into()),
                "i" => manifest.incrs.push(part),
                "h" => {}
                _ => return Err(INVALID.into()),
            }
        }
        if manifest.base.is_none() && manifest.incrs.is_empty() {
            return Err("Found an empty AOF manifest".into());
        }
        Ok(manifest)
    }

    pub fn render(&self) -> String {
        let mut text = String::new();
        for (part, kind) in self
            .base
            .iter()
            .map(|p| (p, 'b'))
            .chain(self.incrs.iter().map(|p| (p, 'i')))
        {
            text.push_str(&format!(
                "file {} seq {} type {kind}\n",
                part.name, part.seq
            ));
        }
        text
    }

    /// The sequence number the next base takes.
    pub fn next_base_seq(&self) -> u64 {
        self.base.as_ref().map_or(1, |b| b.seq + 1)
    }

    /// The sequence number the next increment takes.
    pub fn next_incr_seq(&self) -> u64 {
        self.incrs.last().map_or(1, |i| i.seq + 1)
    }
}

/// The files of one `appendfilename` in `dir/appenddirname`.
pub struct Names {
    pub dir: PathBuf,
    pub name: String,
}

impl Names {
    pub fn of(config: &crate::config::Config) -> Names {
        Names {
            dir: config.dir.join(&config.appenddirname),
            name: config.appendfilename.clone(),
        }
    }

    pub fn manifest(&self) -> PathBuf {
        self.dir.join(format!("{}.manifest", self.name))
    }

    pub fn base(&self, seq: u64) -> Part {
        Part {
            name: format!("{}.{seq}.base.rdb", self.name),
            seq,
        }
    }

    pub fn incr(&self, seq: u64) -> Part {
        Part {
            name: format!("{}.{seq}.incr.aof", self.name),
            seq,
        }
    }

    pub fn path(&self, part: &Part) -> PathBuf {
        self.dir.join(&part.name)
    }

    /// The manifest as it is on disk; None when there is none.
    pub fn read(&self) -> Result<Option<Manifest>, String> {
        let path = self.manifest();
        match std::fs::read_to_string(&path) {
            Ok(text) => Manifest::parse(&text)
                .map(Some)
                .map_err(|why| format!("{}: {why}", path.display())),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(err) => Err(format!("cannot read {}: {err}", path.display())),
        }
    }

    /// Replaces the manifest with `manifest`: written beside it, synced, renamed over it.
    pub fn write(&self, manifest: &Manifest) -> std::io::Result<()> {
        let temp = self.dir.join(format!("temp-{}.manifest", self.name));
        {
            let mut file = std::fs::File::create(&temp)?;
            file.write_all(manifest.render().as_bytes())?;
            file.sync_all()?;
        }
        std::fs::rename(&temp, self.manifest())?;
        sync_dir(&self.dir)
    }
}

/// Makes a rename or a new file in `dir` durable.
pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifests_read_and_write_as_redis_lays_them_out() {
        let text = "file appendonly.aof.2.base.rdb seq 2 type b\nfile appendonly.aof.2.incr.aof seq 2 type i\nfile appendonly.aof.3.incr.aof seq 3 type i\n";
        let manifest = Manifest::parse(text).expect("parses");
        assert_eq!(manifest.base.as_ref().map(|b| b.seq), Some(2));
        assert_eq!(manifest.incrs.len(), 2);
        assert_eq!(manifest.render(), text);
        assert_eq!(manifest.next_base_seq(), 3);
        assert_eq!(manifest.next_incr_seq(), 4);
        // History lines are skipped; fields may come in any order.
        let with_history =
            "file a.1.base.rdb seq 1 type h\ntype b seq 3 file a.3.base.rdb\n# note\n";
        let manifest = Manifest::parse(with_history).expect("parses");
        assert_eq!(manifest.base.map(|b| b.name), Some("a.3.base.rdb".into()));
        for bad in [
            "",
            "file a seq 1\n",
            "file a seq x type b\n",
            "file a seq 1 type z\n",
            "file ../a seq 1 type i\n",
            "file a.1.base.rdb seq 1 type b\nfile a.2.base.rdb seq 2 type b\n",
            "file a seq 1 type\n",
        ] {
            assert!(Manifest::parse(bad).is_err(), "{bad:?} is refused");
        }
    }
}
