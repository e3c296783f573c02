/**
 * One port that speaks both HTTP/1.1 and HTTP/2 over cleartext (h2c with prior knowledge, as
 * Connect and gRPC clients use it). Node's cleartext HTTP/2 server cannot fall back to HTTP/1.1,
 * so a plain TCP listener reads the first bytes of each connection: the HTTP/2 preface starts with
 * "PRI", which no HTTP/1.1 method does.
 */
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";

type Handler = (req: http.IncomingMessage | http2.Http2ServerRequest, res: http.ServerResponse | http2.Http2ServerResponse) => void;

export interface Listener {
  port: number;
  /** Stops accepting, lets requests in flight finish (up to `graceMs`), then closes everything. */
  close(graceMs?: number): Promise<void>;
}

const preface = Buffer.from("PRI");

/**
 * An HTTP/2 response that ends before its request's body (a refused message, a stream core ended)
 * asks the client to stop sending with RST_STREAM NO_ERROR (RFC 9113 §8.1), as Node does when
 * nothing read the body, instead of leaving the stream half open with data the server will never
 * read. The response is complete by then: the stream's writable side has finished.
 */
function endStreamWithResponse(req: http2.Http2ServerRequest): void {
  const stream = req.stream;
  stream.once("finish", () => {
    if (!stream.destroyed && !stream.readableEnded) stream.close(http2.constants.NGHTTP2_NO_ERROR);
  });
}

export interface ListenOptions {
  /**
   * A connection must send enough to tell HTTP/1.1 from HTTP/2 within this long, or it is closed
   * (a server's own timeouts apply only once it owns the socket).
   */
  protocolDetectionMs?: number;
  /**
   * An HTTP/2 connection with no frame either way for this long is closed (gracefully: streams
   * still open finish first).
   */
  http2IdleMs?: number;
}

/** How long a new connection has to send its first bytes. */
export const protocolDetectionMs = 10_000;
/**
 * How long an HTTP/2 connection may stay quiet: twelve of the agent's heartbeats (10 s,
 * core/agents/presence.ts), so its stream never comes near it, while an idle one is let go.
 */
export const http2IdleMs = 120_000;

/** The HTTP/2 flow-control windows this side grants a peer: per stream, and per connection (agent/client.ts grants the same). */
export const http2StreamWindow = 2 * 1024 * 1024;
export const http2SessionWindow = 4 * 1024 * 1024;

/**
 * Reads a new connection's first bytes and hands it over once they tell HTTP/2 (the preface) from
 * HTTP/1.1; a connection that does not tell within `detectionMs` is closed.
 */
function sniffProtocol(socket: net.Socket, detectionMs: number, hand: (isH2: boolean) => void): void {
  // Small writes (server-sent events, agent replies on the h2c stream) go out at once: no
  // Nagle delay waiting for the peer's (delayed) ACK.
  socket.setNoDelay(true);
  const detection = setTimeout(() => socket.destroy(), detectionMs);
  socket.on("close", () => clearTimeout(detection));
  socket.on("error", () => socket.destroy());
  // Read in paused mode (readable + read), so nothing flows before a server owns the socket. The
  // bytes read are kept here until they decide: pushing them back (unshift) would announce
  // `readable` again at once, and a connection that sent "P" would spin the event loop forever.
  let head = Buffer.alloc(0);
  const onReadable = () => {
    for (let chunk: Buffer | null; (chunk = socket.read()) !== null;) head = Buffer.concat([head, chunk]);
    const n = Math.min(head.length, preface.length);
    const isH2 = head.subarray(0, n).equals(preface.subarray(0, n));
    // Too few bytes yet (or none: the peer ended, and "close" follows): wait for more.
    if (head.length === 0 || (isH2 && head.length < preface.length)) return void socket.once("readable", onReadable);
    clearTimeout(detection);
    // Handed over with the bytes read so far pushed back: both servers read those first (an
    // HTTP/2 session takes what the socket holds before it reads from the handle), so each
    // owns the native socket itself, with no stream relaying between.
    socket.unshift(head);
    hand(isH2);
  };
  socket.once("readable", onReadable);
}

export async function listen(handler: Handler, port: number, host: string, options: ListenOptions = {}): Promise<Listener> {
  const detectionMs = options.protocolDetectionMs ?? protocolDetectionMs;
  const idleMs = options.http2IdleMs ?? http2IdleMs;
  let closing = false;
  // HTTP/1.1 connections and their requests in flight. The HTTP server never listens itself, so
  // its own tracking (closeIdleConnections) knows none of them: a close ends the idle ones here.
  const h1Connections = new Map<net.Socket, number>();
  // A request may take up to 30 minutes to arrive whole: an upload of 1 GiB over a slow link
  // (servers/uploadFile). Every other body is at most a few MiB; headers still have 60 s.
  const h1 = http.createServer({ keepAliveTimeout: 5000, headersTimeout: 60_000, requestTimeout: 30 * 60_000 }, (req, res) => {
    const socket = req.socket;
    h1Connections.set(socket, (h1Connections.get(socket) ?? 0) + 1);
    res.once("close", () => {
      const left = (h1Connections.get(socket) ?? 1) - 1;
      h1Connections.set(socket, left);
      if (closing && left === 0) socket.end();
    });
    // Closing: a request on a kept-alive connection is answered, and its connection then ends.
    if (closing) res.shouldKeepAlive = false;
    handler(req, res);
  });
  // At most 128 streams at once per connection (Node's default is 2^32 - 1); each stream's body is
  // flow-controlled, and a session buffers at most maxSessionMemory (10 MB) in all. The windows
  // (what a peer may send before it waits for us to read it) are a file piece's size and twice
  // that, not HTTP/2's 64 KiB: an agent sends a 1 MiB piece of a download without waiting on
  // sixteen round trips of window updates, which under load cost more than the bytes.
  const h2 = http2.createServer({ settings: { maxConcurrentStreams: 128, initialWindowSize: http2StreamWindow } }, (req, res) => {
    endStreamWithResponse(req);
    handler(req, res);
  });
  const sessions = new Set<http2.ServerHttp2Session>();
  h2.on("session", (session) => {
    sessions.add(session);
    session.setLocalWindowSize(http2SessionWindow);
    session.on("close", () => sessions.delete(session));
    // GOAWAY, then the connection ends once its streams have (a quiet one still finishes).
    session.setTimeout(idleMs, () => session.close());
  });
  const sockets = new Set<net.Socket>();

  const tcp = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    sniffProtocol(socket, detectionMs, (isH2) => {
      if (isH2) return void h2.emit("connection", socket);
      h1Connections.set(socket, 0);
      socket.once("close", () => h1Connections.delete(socket));
      h1.emit("connection", socket);
    });
  });

  await new Promise<void>((resolve, reject) => {
    tcp.once("error", reject);
    tcp.listen(port, host, () => resolve());
  });
  const actualPort = (tcp.address() as net.AddressInfo).port;

  return {
    port: actualPort,
    async close(graceMs = 10_000) {
      closing = true;
      const closed = new Promise<void>((resolve) => tcp.close(() => resolve()));
      // Idle kept-alive connections end now; busy ones once their last response has (above).
      for (const [socket, inFlight] of h1Connections) if (inFlight === 0) socket.end();
      for (const session of sessions) session.close();
      h1.close();
      h2.close();
      const deadline = setTimeout(() => {
        for (const session of sessions) session.destroy();
        for (const socket of sockets) socket.destroy();
      }, graceMs);
      deadline.unref();
      await closed;
      clearTimeout(deadline);
    },
  };
}

/** Listens on each of `apps`' ports, in order; a failure closes those already open. */
export async function listenAll(apps: ReadonlyArray<{ app: { callback(): Handler }; port: number; host: string }>): Promise<Listener[]> {
  const open: Listener[] = [];
  try {
    for (const { app, port, host } of apps) open.push(await listen(app.callback(), port, host));
    return open;
  } catch (error) {
    await Promise.all(open.map((listener) => listener.close(0)));
    throw error;
  }
}
