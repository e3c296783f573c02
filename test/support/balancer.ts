/**
 * Reverse proxies in front of several Outpost instances, for the fault tests.
 *
 * {@link startBalancer} is what nginx with `proxy_next_upstream error` does for HTTP: each request
 * goes to an instance (the first in the list that takes the connection, or in turn), with
 * X-Forwarded-For; a request whose instance refuses or drops the connection before answering is
 * sent to the next one, its body replayed. A response that breaks off midway (an instance killed
 * under a server-sent event stream) ends the client's connection, as a real proxy does, so the
 * browser reconnects through the proxy to an instance that lives.
 *
 * {@link startTcpBalancer} passes whole TCP connections on (an agent's HTTP/2 stream), each to the
 * next instance that accepts it.
 */
import http from "node:http";
import net from "node:net";

export interface Balancer {
  url: string;
  /** Requests answered by each upstream port. */
  readonly served: Map<number, number>;
  close(): Promise<void>;
}

/** Request bodies are buffered to be replayed on another instance; Outpost's are small. */
const maxBodyBytes = 1 << 20;

/** Which instance a request tries first: always the first listed, or each in turn. */
export type Pick = "first" | "in-turn";

/** The ports in the order to try them: as listed, or rotated by one for each connection. */
function ordering(upstreamPorts: () => number[], pick: Pick): () => number[] {
  let turn = 0;
  return () => {
    const ports = upstreamPorts();
    if (pick === "first" || ports.length === 0) return ports;
    const start = turn++ % ports.length;
    return [...ports.slice(start), ...ports.slice(0, start)];
  };
}

export async function startBalancer(upstreamPorts: () => number[], pick: Pick = "first"): Promise<Balancer> {
  const served = new Map<number, number>();
  const order = ordering(upstreamPorts, pick);
  const clients = new Set<net.Socket>();

  function forward(req: http.IncomingMessage, res: http.ServerResponse, body: Buffer, ports: number[]): void {
    const [port, ...rest] = ports;
    if (port === undefined) {
      res.writeHead(502, { "content-type": "text/plain" }).end("no instance answered");
      return;
    }
    const headers = { ...req.headers, "x-forwarded-for": req.socket.remoteAddress ?? "", "x-forwarded-proto": "http", connection: "close" };
    const upstream = http.request({ host: "127.0.0.1", port, method: req.method, path: req.url, headers, agent: false }, (answer) => {
      served.set(port, (served.get(port) ?? 0) + 1);
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
      // The instance died mid-response: the client's connection ends too, mid-response.
      answer.on("aborted", () => res.destroy());
      answer.on("error", () => res.destroy());
    });
    upstream.on("error", () => {
      if (res.headersSent) return void res.destroy();
      forward(req, res, body, rest);
    });
    res.on("close", () => upstream.destroy());
    upstream.end(body);
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBodyBytes) return void req.destroy();
      chunks.push(chunk);
    });
    req.on("end", () => forward(req, res, Buffer.concat(chunks), order()));
  });
  server.on("connection", (socket) => {
    clients.add(socket);
    socket.on("close", () => clients.delete(socket));
  });
  return listening(server, served, clients);
}

/** Passes each TCP connection on to the next instance that accepts it. */
export async function startTcpBalancer(upstreamPorts: () => number[]): Promise<Balancer> {
  const served = new Map<number, number>();
  const order = ordering(upstreamPorts, "in-turn");
  const sockets = new Set<net.Socket>();
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  };
  function connect(client: net.Socket, ports: number[]): void {
    const [port, ...rest] = ports;
    if (port === undefined) return void client.destroy();
    const upstream = net.connect(port, "127.0.0.1");
    track(upstream);
    // Refused (the instance is down or restarting): the next one.
    upstream.once("error", () => connect(client, rest));
    upstream.once("connect", () => {
      served.set(port, (served.get(port) ?? 0) + 1);
      upstream.removeAllListeners("error");
      upstream.on("error", () => client.destroy());
      client.on("error", () => upstream.destroy());
      client.pipe(upstream).pipe(client);
      upstream.on("close", () => client.destroy());
      client.on("close", () => upstream.destroy());
      client.resume();
    });
  }
  const server = net.createServer({ pauseOnConnect: true }, (client) => {
    track(client);
    connect(client, order());
  });
  return listening(server, served, sockets);
}

/** Listens on a loopback port; closing ends the connections in `sockets` first. */
async function listening(server: net.Server, served: Map<number, number>, sockets: Set<net.Socket>): Promise<Balancer> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    served,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
