/**
 * A reverse proxy in front of several Outpost instances, for the fault tests: what nginx with
 * `proxy_next_upstream error` does. Each request goes to the first instance in the list that takes
 * the connection (so the first one holds every request while it lives, and which instance serves
 * what is known), with X-Forwarded-For; a request whose instance refuses or drops the connection
 * before answering is sent to the next one, its body replayed. A response that breaks off midway
 * (an instance killed under a server-sent event stream) ends the client's connection, as a real
 * proxy does, so the browser reconnects through the proxy to an instance that lives.
 */
import http from "node:http";

export interface Balancer {
  url: string;
  /** Requests answered by each upstream port. */
  readonly served: Map<number, number>;
  close(): Promise<void>;
}

/** Request bodies are buffered to be replayed on another instance; Outpost's are small. */
const maxBodyBytes = 1 << 20;

export async function startBalancer(upstreamPorts: () => number[]): Promise<Balancer> {
  const served = new Map<number, number>();
  const clients = new Set<import("node:net").Socket>();

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
    req.on("end", () => forward(req, res, Buffer.concat(chunks), upstreamPorts()));
  });
  server.on("connection", (socket) => {
    clients.add(socket);
    socket.on("close", () => clients.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as import("node:net").AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    served,
    async close() {
      for (const socket of clients) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
