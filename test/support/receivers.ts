/**
 * Local receivers for outbound deliveries, written from the specifications and not from Outpost's
 * code: an HTTP receiver that can answer as told (2xx, 500, a redirect, never, or by closing the
 * connection), a Standard Webhooks signature check, and an SMTP server (smtp-server) that keeps
 * what it receives.
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

export async function startHttpReceiver(behaviour: Behaviour = { status: 204 }): Promise<HttpReceiver> {
  const sockets = new Set<Socket>();
  const receiver: HttpReceiver = { origin: "", port: 0, received: [], behaviour, close: async () => {} };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      receiver.received.push({ method: req.method ?? "", path: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
      const b = receiver.behaviour;
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
        : Buffer.from(text.replace(/_/g, " ").replace(/=([0-9A-F]{2})/gi, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16))), "latin1").toString("utf8"),
    );
}
