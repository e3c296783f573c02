/**
 * A TCP proxy in front of the test's PostgreSQL server, for what a real network does to a
 * database connection: drop it (`cut`), refuse new ones (`refuse`), or stall, passing nothing in
 * either direction while holding what was sent (`stall`) until `resume` passes it on.
 */
import net from "node:net";

export interface TcpProxy {
  /** The URL of `databaseUrl`'s database through the proxy. */
  url: string;
  /** Connections the proxy accepted, refused ones included. */
  readonly accepted: number;
  /** Connections open through it now. */
  readonly open: number;
  /** Ends every connection open through it now. */
  cut(): void;
  /** New connections are closed at once (true), or passed on (false). */
  refuse(refusing: boolean): void;
  /** Nothing passes, on open connections and new ones, until {@link resume}. */
  stall(): void;
  /** Passes on what was held, and everything after. */
  resume(): void;
  close(): Promise<void>;
}

interface Pair {
  client: net.Socket;
  upstream: net.Socket;
  held: Array<[net.Socket, Buffer]>;
}

export async function startTcpProxy(databaseUrl: string): Promise<TcpProxy> {
  const target = new URL(databaseUrl);
  const pairs = new Set<Pair>();
  let accepted = 0;
  let refusing = false;
  let stalled = false;

  const server = net.createServer((client) => {
    accepted++;
    if (refusing) return void client.destroy();
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    const pair: Pair = { client, upstream, held: [] };
    pairs.add(pair);
    const pass = (to: net.Socket) => (data: Buffer) => (stalled ? pair.held.push([to, data]) : to.write(data));
    client.on("data", pass(upstream));
    upstream.on("data", pass(client));
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    for (const socket of [client, upstream]) {
      socket.on("error", end);
      socket.on("close", end);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = new URL(databaseUrl);
  url.hostname = "127.0.0.1";
  url.port = String((server.address() as net.AddressInfo).port);

  return {
    url: url.toString(),
    get accepted() {
      return accepted;
    },
    get open() {
      return pairs.size;
    },
    cut() {
      for (const pair of [...pairs]) pair.client.destroy();
    },
    refuse(value) {
      refusing = value;
    },
    stall() {
      stalled = true;
    },
    resume() {
      stalled = false;
      for (const pair of pairs) for (const [to, data] of pair.held.splice(0)) to.write(data);
    },
    async close() {
      for (const pair of [...pairs]) pair.client.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
