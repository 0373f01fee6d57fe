-- The scope rows of short-term memory: the same layout as the bot's own table, so both can share it.
-- IF NOT EXISTS everywhere: the bot may have created the table already.
CREATE TABLE IF NOT EXISTS short_term_memories (
    stm_id              SERIAL PRIMARY KEY,
    server_disc_id      TEXT,
    user_disc_id        TEXT,
    channel_disc_id     TEXT NOT NULL,
    persona_id          INTEGER,
    persona_lineage_id  INTEGER,
    scope_kind          TEXT NOT NULL CHECK (scope_kind IN ('server', 'user')),
    categories          JSONB NOT NULL DEFAULT '{}'::jsonb,
    summary             TEXT,
    turns_since_refresh INTEGER NOT NULL DEFAULT 0,
    last_refreshed_turn INTEGER NOT NULL DEFAULT 0,
    updated_at          TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE UNIQUE INDEX IF NOT EXISTS short_term_memories_scope_key ON short_term_memories (
    scope_kind, COALESCE(server_disc_id, ''), COALESCE(user_disc_id, ''), channel_disc_id, COALESCE(persona_id, 0)
);

CREATE INDEX IF NOT EXISTS short_term_memories_updated_at ON short_term_memories (updated_at);

-- updated_at stays current on every update, whoever writes the row.
CREATE OR REPLACE FUNCTION short_term_memories_touch() RETURNS trigger AS $$
BEGIN
    NEW.updated_at := now();
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS short_term_memories_touch ON short_term_memories;
CREATE TRIGGER short_term_memories_touch BEFORE UPDATE ON short_term_memories
    FOR EACH ROW EXECUTE FUNCTION short_term_memories_touch();
