"""stmd from a Python bot (redis-py 5): capture a turn, read memory for the next prompt, write a
summary, forget a user. docs/stm.md, "Use it from your bot", says what each step is for."""

import json

import redis

r = redis.Redis(host="127.0.0.1", port=6379, protocol=3, decode_responses=True)


def capture(user, channel, server, history, replies, privacy="MINIMAL"):
    """Right after the bot delivered its replies. Returns the keys written ([] when skipped)."""
    args = ["STM.CAPTURE", "USER", user, "CHANNEL", channel, "SERVER", server or "DM",
            "PRIVACY", privacy]
    for m in history:  # oldest first; role is "user" or "model"
        args += ["MSG", m["role"], m.get("speaker") or "-", m["content"]]
    for rep in replies:
        args += ["REPLY", rep["persona"], rep.get("lineage") or "-", rep["speaker"], rep["text"]]
    return r.execute_command(*args)


def context(user, channel, server, persona, lineage=None, bot="the assistant", cadence=8):
    """Before building the next prompt, one round trip: "items" are the memory blocks to add to the
    prompt (other channels' memories, then this conversation's summary), "nudge" says the model
    should write a summary now, "turns_since_refresh" and "keys" say where it all came from."""
    args = ["STM.CONTEXT", "USER", user, "CHANNEL", channel, "SERVER", server or "DM",
            "PERSONA", persona, "BOT", bot, "CADENCE", cadence]
    if lineage:
        args += ["LINEAGE", lineage]  # only memories of this persona's lineage
    return json.loads(r.execute_command(*args, "FORMAT", "JSON"))


def summary(user, channel, server, persona, text):
    """Store a model-written summary; resets turns_since_refresh."""
    return r.execute_command("STM.SUMMARY", "USER", user, "CHANNEL", channel,
                             "SERVER", server or "DM", "PERSONA", persona, "TEXT", text)


def forget(user):
    """"Forget me": deletes the user's entries; returns how many."""
    return r.execute_command("STM.FORGET", "USER", user)
