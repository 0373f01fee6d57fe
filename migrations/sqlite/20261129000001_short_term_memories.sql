-- The embedded default: the same table as on Postgres. categories holds a JSON object as text;
-- updated_at is UTC text with milliseconds ('YYYY-MM-DD HH:MM:SS.SSS').
CREATE TABLE IF NOT EXISTS short_term_memories (
    stm_id              INTEGER PRIMARY KEY AUTOINCREMENT,
    server_disc_id      TEXT,
    user_disc_id        TEXT,
    channel_disc_id     TEXT NOT NULL,
    persona_id          INTEGER,
    persona_lineage_id  INTEGER,
    scope_kind          TEXT NOT NULL CHECK (scope_kind IN ('server', 'user')),
    categories          TEXT NOT NULL DEFAULT '{}',
    summary             TEXT,
    turns_since_refresh INTEGER NOT NULL DEFAULT 0,
    last_refreshed_turn INTEGER NOT NULL DEFAULT 0,
    updated_at          TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now'))
);

CREATE UNIQUE INDEX IF NOT EXISTS short_term_memories_scope_key ON short_term_memories (
    scope_kind, COALESCE(server_disc_id, ''), COALESCE(user_disc_id, ''), channel_disc_id, COALESCE(persona_id, 0)
);

CREATE INDEX IF NOT EXISTS short_term_memories_updated_at ON short_term_memories (updated_at);

CREATE TRIGGER IF NOT EXISTS short_term_memories_touch AFTER UPDATE ON short_term_memories
    FOR EACH ROW WHEN NEW.updated_at = OLD.updated_at
BEGIN
    UPDATE short_term_memories SET updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now') WHERE stm_id = NEW.stm_id;
END;
