/**
 * What a bus message carries on the PostgreSQL channel: an HMAC-SHA256 of the time it was sent,
 * its topic and its payload, under a key every instance derives from KEY_ENCRYPTION_KEY. Any role
 * of the database can LISTEN and NOTIFY on the channel; without the key it can inject nothing (a
 * `console-command:<connection id>` would run a command on a game server with no activity event),
 * and a message it saw and sends again is refused: too old past {@link freshForMs}, or already
 * heard. Receivers compare MACs in constant time. The payload stays readable to those roles
 * (docs/security.md says so).
 *
 * On the wire: `<MAC, base64url>\n<sent at, ms since the epoch>\n<topic>\n<payload>`.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { BoundedMap } from "./bounded-map.ts";

/** The purpose the bus's HMAC key is derived for (core/keys/key-encryption.ts `derivedSecret`). */
export const busKeyPurpose = "instance bus message authentication";

/** The bytes the envelope adds to topic, "\n" and payload: a 43-character MAC, a 13-digit time, two "\n". */
export const envelopeBytes = 43 + 1 + 13 + 1;

/** How old (or how far ahead of this instance's clock) a message may be when it arrives. */
export const freshForMs = 30_000;

/** The most messages remembered as heard (they are forgotten once too old to be accepted anyway). */
const heardKept = 100_000;

const mac = (key: string, body: string) => createHmac("sha256", key).update(body).digest();

/** The message as sent at `sentAt`. */
export function seal(key: string, topic: string, payload: string, sentAt: number): string {
  const body = `${sentAt}\n${topic}\n${payload}`;
  return `${mac(key, body).toString("base64url")}\n${body}`;
}

export type Opened = { topic: string; payload: string } | { refused: "malformed" | "forged" | "stale" | "replayed" };

/** Opens what {@link seal} made with the same key, once: a second delivery of one message is "replayed". */
export function createEnvelopeOpener(key: () => string): (wire: string, now: number) => Opened {
  /** The MACs of the messages accepted, oldest first, with when each was sent. */
  const heard = new BoundedMap<string, number>(heardKept);

  function forget(now: number) {
    for (const [tag, sentAt] of heard) {
      if (now - sentAt <= freshForMs) return;
      heard.delete(tag);
    }
  }

  return (wire, now) => {
    const [tag, sentAtText, topic] = wire.split("\n", 3);
    if (topic === undefined || !/^\d{1,15}$/.test(sentAtText)) return { refused: "malformed" };
    const body = wire.slice(tag.length + 1);
    // Compared as written, not decoded: another spelling of the same MAC (the last character's
    // spare bits) would otherwise pass as a new tag, and a replay would not be recognised.
    const given = Buffer.from(tag);
    const expected = Buffer.from(mac(key(), body).toString("base64url"));
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { refused: "forged" };
    const sentAt = Number(sentAtText);
    if (Math.abs(now - sentAt) > freshForMs) return { refused: "stale" };
    if (heard.has(tag)) return { refused: "replayed" };
    forget(now);
    heard.set(tag, sentAt);
    return { topic, payload: body.slice(sentAtText.length + 1 + topic.length + 1) };
  };
}
