// stmd from a TypeScript bot (ioredis 5): capture a turn, read memory for the next prompt, write a
// summary, forget a user. docs/stm.md, "Use it from your bot", says what each step is for.
import Redis from "ioredis";

export const redis = new Redis({ host: "127.0.0.1", port: 6379, lazyConnect: true });

export interface Turn { role: "user" | "model"; speaker?: string; content: string }
export interface Reply { persona: string; lineage?: string; speaker: string; text: string }
/** STM.CONTEXT's reply: the prompt blocks, whether to ask for a summary, and their sources. */
export interface StmContext { items: string[]; nudge: boolean; turns_since_refresh: number; keys: string[] }

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

/** Before building the next prompt, one round trip: the memory blocks to add and the summary nudge. */
export async function context(
  user: string, channel: string, server: string | null, persona: string,
  opts: { lineage?: string; bot?: string; cadence?: number } = {},
): Promise<StmContext> {
  const args = ["USER", user, "CHANNEL", channel, "SERVER", server ?? "DM", "PERSONA", persona,
    "BOT", opts.bot ?? "the assistant", "CADENCE", String(opts.cadence ?? 8)];
  if (opts.lineage) args.push("LINEAGE", opts.lineage); // only memories of this persona's lineage
  return JSON.parse((await redis.call("STM.CONTEXT", ...args, "FORMAT", "JSON")) as string) as StmContext;
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
