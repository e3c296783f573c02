/**
 * Local receivers for outbound deliveries, written from the specifications and not from Outpost's
 * code: an HTTP receiver that can answer as told (2xx, 500, a redirect, never, or by closing the
 * connection), a Discord stand-in that checks an execute-webhook body as Discord documents it, a
 * Standard Webhooks signature check, and an SMTP server (smtp-server) that keeps what it receives.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { SMTPServer } from "smtp-server";

export interface Received {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** How the receiver answers the next requests. */
export type Behaviour = { status: number; body?: string; headers?: Record<string, string> } | "hang" | "close";

export interface HttpReceiver {
  /** http://127.0.0.1:<port> */
  origin: string;
  port: number;
  received: Received[];
  behaviour: Behaviour;
  close(): Promise<void>;
}

/** An answer of the receiver's own, given before its behaviour (a refusal of a body it checks), or undefined. */
export type Check = (request: Received) => { status: number; body: string; headers: Record<string, string> } | undefined;

export async function startHttpReceiver(behaviour: Behaviour = { status: 204 }, check?: Check): Promise<HttpReceiver> {
  const sockets = new Set<Socket>();
  const receiver: HttpReceiver = { origin: "", port: 0, received: [], behaviour, close: async () => {} };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const request = { method: req.method ?? "", path: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks).toString("utf8") };
      receiver.received.push(request);
      const b = check?.(request) ?? receiver.behaviour;
      if (b === "hang") return;
      if (b === "close") return req.socket.destroy();
      res.writeHead(b.status, b.headers ?? {});
      res.end(b.body ?? "");
    });
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  receiver.port = (server.address() as AddressInfo).port;
  receiver.origin = `http://127.0.0.1:${receiver.port}`;
  receiver.close = () =>
    new Promise((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    });
  return receiver;
}

/**
 * A Discord webhook's stand-in: an HTTP receiver that checks each body as Discord's execute-webhook
 * does and, for one Discord would refuse, answers as Discord does: 400 with code 50035 ("Invalid
 * Form Body") and the errors by field. A body it accepts gets the receiver's behaviour (204, as
 * Discord answers without `?wait=true`, unless told otherwise).
 */
export function startDiscordReceiver(behaviour: Behaviour = { status: 204 }): Promise<HttpReceiver> {
  return startHttpReceiver(behaviour, (request) => {
    let body: unknown;
    try {
      body = JSON.parse(request.body);
    } catch {
      return { status: 400, headers: { "content-type": "application/json" }, body: JSON.stringify({ code: 50109, message: "The request body contains invalid JSON." }) };
    }
    const errors = discordWebhookErrors(body);
    if (!errors) return undefined;
    return { status: 400, headers: { "content-type": "application/json" }, body: JSON.stringify({ code: 50035, errors, message: "Invalid Form Body" }) };
  });
}

type FieldErrors = { [field: string]: FieldErrors } & { _errors?: Array<{ code: string; message: string }> };

/**
 * What Discord would refuse in an execute-webhook body, as its documentation states (Webhook
 * resource, "Execute Webhook"; Message resource, "Embed Object" and "Embed Limits"), in Discord's
 * own shape (`{embeds: {"0": {url: {_errors: [...]}}}}`); undefined when it would accept it.
 * Lengths are counted in characters (code points). Checked: content (≤ 2,000) or embeds present;
 * username 1–80; at most 10 embeds; per embed title ≤ 256, description ≤ 4,096, `url` (and the
 * author's, the image's and the thumbnail's) an absolute http(s) URL, timestamp ISO 8601, color an
 * integer 0–0xFFFFFF, footer text 1–2,048, author name 1–256, at most 25 fields each with a name
 * 1–256 and a value 1–1,024; and the characters of all embeds' titles, descriptions, field names
 * and values, footer texts and author names at most 6,000 together; `allowed_mentions.parse` only
 * "roles", "users", "everyone".
 */
export function discordWebhookErrors(body: unknown): FieldErrors | undefined {
  const check = discordChecks();
  if (!body || typeof body !== "object" || Array.isArray(body)) {
    check.add([], "MODEL_TYPE_CONVERT", "Only dictionaries may be used in a ModelType");
    return check.errors;
  }
  const message = body as Record<string, unknown>;
  checkMessage(check, message);
  if (message.embeds !== undefined) checkEmbeds(check, message.embeds);
  return Object.keys(check.errors).length ? check.errors : undefined;
}

/** Discord's error tree as it is built, and the checks of a field that add to it. */
interface DiscordChecks {
  errors: FieldErrors;
  add(path: string[], code: string, message: string): void;
  /** A string of `min` to `max` characters. */
  text(path: string[], value: unknown, min: number, max: number): void;
  /** An absolute http(s) URL. */
  url(path: string[], value: unknown): void;
}

/** A length in characters (code points), as Discord counts. */
const characters = (value: unknown) => [...String(value)].length;

function discordChecks(): DiscordChecks {
  const errors: FieldErrors = {};
  const add = (path: string[], code: string, message: string) => {
    let node = errors;
    for (const key of path) node = node[key] ??= {} as FieldErrors;
    (node._errors ??= []).push({ code, message });
  };
  const text = (path: string[], value: unknown, min: number, max: number) => {
    if (typeof value !== "string") return add(path, "BASE_TYPE_REQUIRED", "This field is required");
    if (characters(value) < min || characters(value) > max) add(path, "BASE_TYPE_BAD_LENGTH", `Must be between ${min} and ${max} in length.`);
  };
  const url = (path: string[], value: unknown) => {
    let parsed: URL | undefined;
    try {
      parsed = new URL(String(value));
    } catch {
      return add(path, "URL_TYPE_INVALID_URL", "Not a well formed URL.");
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:")
      add(path, "URL_TYPE_INVALID_SCHEME", `Scheme "${parsed.protocol.slice(0, -1)}" is not supported. Scheme must be one of ('http', 'https').`);
  };
  return { errors, add, text, url };
}

/** The message's own fields: something to send, content, username, allowed_mentions. */
function checkMessage(check: DiscordChecks, message: Record<string, unknown>): void {
  const embeds = message.embeds;
  if (message.content === undefined && (!Array.isArray(embeds) || embeds.length === 0)) check.add([], "MESSAGE_EMPTY", "Cannot send an empty message");
  if (message.content !== undefined) check.text(["content"], message.content, 0, 2000);
  if (message.username !== undefined) check.text(["username"], message.username, 1, 80);
  const parse = (message.allowed_mentions as { parse?: unknown } | undefined)?.parse;
  if (parse !== undefined && (!Array.isArray(parse) || parse.some((p) => !["roles", "users", "everyone"].includes(p as string)))) {
    check.add(["allowed_mentions", "parse"], "ENUM_TYPE_COERCE", "Value must be one of ('roles', 'users', 'everyone').");
  }
}

/** At most 10 embeds, each checked, and at most 6,000 characters in all of them together. */
function checkEmbeds(check: DiscordChecks, embeds: unknown): void {
  if (!Array.isArray(embeds)) return check.add(["embeds"], "BASE_TYPE_ARRAY", "Must be an array.");
  if (embeds.length > 10) return check.add(["embeds"], "BASE_TYPE_MAX_LENGTH", "Must be 10 or fewer in length.");
  let total = 0;
  embeds.forEach((raw, i) => {
    total += checkEmbed(check, (raw ?? {}) as Record<string, unknown>, (...path) => ["embeds", String(i), ...path]);
  });
  if (total > 6000) check.add(["embeds"], "BASE_TYPE_MAX_LENGTH", "Embed size exceeds maximum size of 6000");
}

/** ISO 8601 with a time and a zone, as Discord parses an embed's timestamp. */
function isIsoTimestamp(value: unknown): boolean {
  return typeof value === "string" && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/.test(value) && !Number.isNaN(Date.parse(value));
}

/** Checks one embed; returns the characters it counts toward the 6,000 of all embeds. */
function checkEmbed(check: DiscordChecks, embed: Record<string, unknown>, at: (...path: string[]) => string[]): number {
  const footer = embed.footer as Record<string, unknown> | undefined;
  const author = embed.author as Record<string, unknown> | undefined;
  if (embed.title !== undefined) check.text(at("title"), embed.title, 0, 256);
  if (embed.description !== undefined) check.text(at("description"), embed.description, 0, 4096);
  if (embed.url !== undefined) check.url(at("url"), embed.url);
  if (embed.timestamp !== undefined && !isIsoTimestamp(embed.timestamp))
    check.add(at("timestamp"), "DATE_TIME_TYPE_PARSE", "Could not parse the timestamp. Should be ISO8601.");
  if (embed.color !== undefined && !(Number.isInteger(embed.color) && (embed.color as number) >= 0 && (embed.color as number) <= 0xffffff))
    check.add(at("color"), "NUMBER_TYPE_COERCE", "Value is not int.");
  if (footer !== undefined) check.text(at("footer", "text"), footer.text, 1, 2048);
  if (author !== undefined) {
    check.text(at("author", "name"), author.name, 1, 256);
    if (author.url !== undefined) check.url(at("author", "url"), author.url);
  }
  for (const media of ["image", "thumbnail"]) {
    const m = embed[media] as Record<string, unknown> | undefined;
    if (m !== undefined && !String(m.url).startsWith("attachment://")) check.url(at(media, "url"), m.url);
  }
  const fields = checkFields(check, embed.fields as Array<Record<string, unknown>> | undefined, at);
  return fields + characters(embed.title ?? "") + characters(embed.description ?? "") + characters(footer?.text ?? "") + characters(author?.name ?? "");
}

/** At most 25 fields, each with a name and a value; returns their characters. */
function checkFields(check: DiscordChecks, fields: Array<Record<string, unknown>> | undefined, at: (...path: string[]) => string[]): number {
  if (fields === undefined) return 0;
  if (!Array.isArray(fields) || fields.length > 25) {
    check.add(at("fields"), "BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length.");
    return 0;
  }
  let total = 0;
  fields.forEach((f, j) => {
    check.text(at("fields", String(j), "name"), f.name, 1, 256);
    check.text(at("fields", String(j), "value"), f.value, 1, 1024);
    total += characters(f.name ?? "") + characters(f.value ?? "");
  });
  return total;
}

/**
 * The Standard Webhooks check (standardwebhooks.com, "Verifying webhook authenticity"): the key
 * is the base64 after `whsec_`; the signed content is `${id}.${timestamp}.${body}`; the header
 * holds space-separated `v1,<base64>` signatures; timestamps older or newer than 5 minutes fail.
 */
export function verifyStandardWebhook(secret: string, headers: IncomingHttpHeaders, body: string, nowSeconds = Date.now() / 1000): boolean {
  const id = headers["webhook-id"];
  const timestamp = headers["webhook-timestamp"];
  const signatures = headers["webhook-signature"];
  if (typeof id !== "string" || typeof timestamp !== "string" || typeof signatures !== "string") return false;
  if (!/^\d+$/.test(timestamp) || Math.abs(nowSeconds - Number(timestamp)) > 300) return false;
  if (!secret.startsWith("whsec_")) return false;
  const key = Buffer.from(secret.slice("whsec_".length), "base64");
  const expected = createHmac("sha256", key).update(`${id}.${timestamp}.${body}`).digest();
  return signatures.split(" ").some((entry) => {
    const [version, encoded] = entry.split(",", 2);
    if (version !== "v1" || !encoded) return false;
    const given = Buffer.from(encoded, "base64");
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

export interface ReceivedMail {
  from: string;
  to: string[];
  raw: string;
}

export interface SmtpReceiver {
  url: string;
  received: ReceivedMail[];
  close(): Promise<void>;
}

/** An SMTP server on 127.0.0.1 without TLS or authentication, keeping each message it is sent. */
export async function startSmtpReceiver(): Promise<SmtpReceiver> {
  const received: ReceivedMail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => {
        received.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
          to: session.envelope.rcptTo.map((r) => r.address),
          raw: Buffer.concat(chunks).toString("utf8"),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.server.address() as AddressInfo).port;
  return { url: `smtp://127.0.0.1:${port}`, received, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/**
 * The text of a received single-part message, its transfer encoding undone (quoted-printable,
 * base64 or none), lines ending in "\n".
 */
export function mailText(raw: string): string {
  const [head, ...rest] = raw.split("\r\n\r\n");
  const body = rest.join("\r\n\r\n");
  const encoding = (mailHeader(head, "content-transfer-encoding") ?? "7bit").toLowerCase();
  const bytes =
    encoding === "base64"
      ? Buffer.from(body.replace(/\s+/g, ""), "base64")
      : encoding === "quoted-printable"
        ? Buffer.from(
            body.replace(/=\r\n/g, "").replace(/=([0-9A-F]{2})/gi, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16))),
            "latin1",
          )
        : Buffer.from(body, "utf8");
  return bytes.toString("utf8").replace(/\r\n/g, "\n");
}

/** A header of a received message, unfolded, with RFC 2047 encoded words (B and Q) decoded. */
export function mailHeader(raw: string, name: string): string | undefined {
  const head = raw.split("\r\n\r\n", 1)[0].replace(/\r\n[ \t]+/g, " ");
  const line = head.split("\r\n").find((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`));
  if (line === undefined) return undefined;
  return line
    .slice(name.length + 1)
    .trim()
    .replace(/\?=\s+=\?/g, "?==?")
    .replace(/=\?([^?]+)\?([BQ])\?([^?]*)\?=/gi, (_, _charset: string, encoding: string, text: string) =>
      encoding.toUpperCase() === "B"
        ? Buffer.from(text, "base64").toString("utf8")
        : Buffer.from(
            text.replace(/_/g, " ").replace(/=([0-9A-F]{2})/gi, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16))),
            "latin1",
          ).toString("utf8"),
    );
}

/** The verification link mailed to `to` last (the page's URL, its token after `token=`). */
export function verificationLinkTo(smtp: SmtpReceiver, to: string): { link: string; token: string } | undefined {
  const mail = smtp.received.findLast((m) => m.to.includes(to) && /confirm/i.test(mailHeader(m.raw, "subject") ?? ""));
  const link = mail && /https?:\/\/\S+\/verify-email\?token=(opv_[0-9A-Za-z]{40})/.exec(mailText(mail.raw));
  return link ? { link: link[0], token: link[1] } : undefined;
}
