// stmd from a TypeScript bot (ioredis 5): capture a turn, read memory for the next prompt, write a
// summary, forget a user. The same code is in the README's "Use it from your bot" section.
import Redis from "ioredis";

export const redis = new Redis({ host: "127.0.0.1", port: 6379, lazyConnect: true });

export interface Turn { role: "user" | "model"; speaker?: string; content: string }
export interface Reply { persona: string; lineage?: string; speaker: string; text: string }
export interface StmEntry {
  key: string;
  scope: "user" | "server";
  messages: { role: string; speaker: string | null; content: string; ts: number }[];
  summary: string | null;
  categories: Record<string, string>;
  turns_since_refresh: number;
  ttl: number;
}

/** Right after the bot delivered its replies. Returns the keys written ([] when skipped). */
export async function capture(
  user: string, channel: string, server: string | null,
  history: Turn[], replies: Reply[], privacy = "MINIMAL",
): Promise<string[]> {
  const args = ["USER", user, "CHANNEL", channel, "SERVER", server ?? "DM", "PRIVACY", privacy];
  for (const m of history) args.push("MSG", m.role, m.speaker ?? "-", m.content); // oldest first
  for (const r of replies) args.push("REPLY", r.persona, r.lineage ?? "-", r.speaker, r.text);
  return (await redis.call("STM.CAPTURE", ...args)) as string[];
}

/** The live scope: the server entry in a server, the user entry in a DM. */
export const memoryKey = (user: string, channel: string, server: string | null, persona: string) =>
  server ? `shortterm:server:${server}:${channel}:${persona}` : `shortterm:user:${user}:${channel}:${persona}`;

/** This conversation's entry (messages, summary, categories, counters), or null. */
export async function get(user: string, channel: string, server: string | null, persona: string): Promise<StmEntry | null> {
  const text = (await redis.call("STM.GET", memoryKey(user, channel, server, persona), "FORMAT", "JSON")) as string | null;
  return text ? (JSON.parse(text) as StmEntry) : null;
}

/** The user's other live conversations, newest first. */
export async function recent(user: string, excludeChannel?: string, limit = 3): Promise<StmEntry[]> {
  const args = ["USER", user, ...(excludeChannel ? ["EXCLUDE", excludeChannel] : []), "LIMIT", String(limit)];
  return JSON.parse((await redis.call("STM.RECENT", ...args, "FORMAT", "JSON")) as string) as StmEntry[];
}

/** Store a model-written summary; resets turns_since_refresh. */
export async function summary(user: string, channel: string, server: string | null, persona: string, text: string) {
  return (await redis.call("STM.SUMMARY", "USER", user, "CHANNEL", channel, "SERVER", server ?? "DM",
    "PERSONA", persona, "TEXT", text)) as string[];
}

/** "Forget me": deletes the user's entries; returns how many. */
export async function forget(user: string): Promise<number> {
  return (await redis.call("STM.FORGET", "USER", user)) as number;
}
