"""stmd from a Python bot (redis-py 5): capture a turn, read memory for the next prompt, write a
summary, forget a user. The same code is in the README's "Use it from your bot" section."""

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


def memory_key(user, channel, server, persona):
    """The live scope: the server entry in a server, the user entry in a DM."""
    if server:
        return f"shortterm:server:{server}:{channel}:{persona}"
    return f"shortterm:user:{user}:{channel}:{persona}"


def get(user, channel, server, persona):
    """This conversation's entry (messages, summary, categories, counters), or None."""
    text = r.execute_command("STM.GET", memory_key(user, channel, server, persona), "FORMAT", "JSON")
    return json.loads(text) if text else None


def recent(user, exclude_channel=None, limit=3):
    """The user's other live conversations, newest first."""
    args = ["STM.RECENT", "USER", user]
    if exclude_channel:
        args += ["EXCLUDE", exclude_channel]
    return json.loads(r.execute_command(*args, "LIMIT", limit, "FORMAT", "JSON"))


def summary(user, channel, server, persona, text):
    """Store a model-written summary; resets turns_since_refresh."""
    return r.execute_command("STM.SUMMARY", "USER", user, "CHANNEL", channel,
                             "SERVER", server or "DM", "PERSONA", persona, "TEXT", text)


def forget(user):
    """"Forget me": deletes the user's entries; returns how many."""
    return r.execute_command("STM.FORGET", "USER", user)
