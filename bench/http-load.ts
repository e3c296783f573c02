/**
 * A lean HTTP/1.1 load generator for the benchmarks: `connections` keep-alive sockets, each sending
 * its next request when the previous response has fully arrived (no pipelining), until `amount`
 * requests were sent or `seconds` passed. It builds each request as one string and reads only the
 * status line and Content-Length of each response.
 *
 * Why not autocannon: on this 2-core machine the load generator shares the cores with Outpost and
 * PostgreSQL, and autocannon spent ~130 µs of CPU per request (measured with /proc), about a tenth
 * of what a token exchange costs everything else; this one spends a fraction of that, so more of
 * the machine measures Outpost. `BENCH_LOAD=autocannon` runs autocannon instead, for comparison.
 */
import { connect, type Socket } from "node:net";

export interface LoadRequest {
  method: "GET" | "POST";
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface LoadResult {
  /** 2xx responses. */
  ok: number;
  non2xx: number;
  /** Sockets that failed or closed under a request. */
  errors: number;
  /** From the first request sent to the last response received. */
  seconds: number;
  p50: number;
  p99: number;
  /** This process's CPU (user + system) per response, µs: what generating the load cost. */
  generatorCpuMicros: number;
}

export interface LoadOptions {
  url: string;
  connections: number;
  /** Stop after this many requests (all of them answered)… */
  amount?: number;
  /** …or after this long. */
  seconds?: number;
  /** The i-th request (0-based). */
  request: (i: number) => LoadRequest;
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

const headerEnd = Buffer.from("\r\n\r\n");

/** Reads responses off one socket: calls `done(status)` for each complete one. */
function responseReader(done: (status: number) => void, fail: (error: Error) => void) {
  let buffered: Buffer = Buffer.alloc(0);
  let bodyLeft = -1; // bytes of the current body still to come; -1 while reading headers
  let status = 0;
  return (chunk: Buffer) => {
    buffered = buffered.length ? Buffer.concat([buffered, chunk]) : chunk;
    for (;;) {
      if (bodyLeft < 0) {
        const end = buffered.indexOf(headerEnd);
        if (end < 0) return;
        const head = buffered.toString("latin1", 0, end);
        status = Number(head.slice(9, 12));
        const length = /\r\ncontent-length: *(\d+)/i.exec(head);
        if (!length) return fail(new Error(`a response without Content-Length: ${head.split("\r\n")[0]}`));
        bodyLeft = Number(length[1]);
        buffered = buffered.subarray(end + 4);
      }
      if (buffered.length < bodyLeft) return;
      buffered = buffered.subarray(bodyLeft);
      bodyLeft = -1;
      done(status);
    }
  };
}

export async function httpLoad(options: LoadOptions): Promise<LoadResult> {
  const url = new URL(options.url);
  const port = Number(url.port || 80);
  const hostHeader = `Host: ${url.host}\r\n`;
  const latencies: number[] = [];
  let sent = 0;
  let ok = 0;
  let non2xx = 0;
  let errors = 0;
  let first = 0;
  let last = 0;
  const deadline = options.seconds === undefined ? Infinity : performance.now() + options.seconds * 1000;
  const more = () => (options.amount === undefined || sent < options.amount) && performance.now() < deadline;

  const text = (r: LoadRequest) => {
    let head = `${r.method} ${r.path} HTTP/1.1\r\n${hostHeader}`;
    for (const [name, value] of Object.entries(r.headers ?? {})) head += `${name}: ${value}\r\n`;
    const body = r.body ?? "";
    return `${head}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  };

  const cpuBefore = process.cpuUsage();
  await Promise.all(
    Array.from(
      { length: options.connections },
      () =>
        new Promise<void>((resolve) => {
          const socket: Socket = connect({ host: url.hostname, port, noDelay: true });
          let started = 0;
          let busy = false;
          const next = () => {
            if (!more()) {
              socket.end();
              return resolve();
            }
            const request = options.request(sent++);
            started = performance.now();
            if (!first) first = started;
            busy = true;
            socket.write(text(request));
          };
          socket.on(
            "data",
            responseReader(
              (status) => {
                last = performance.now();
                latencies.push(last - started);
                if (status >= 200 && status < 300) ok++;
                else non2xx++;
                busy = false;
                next();
              },
              (error) => socket.destroy(error),
            ),
          );
          socket.on("error", () => {});
          socket.on("close", () => {
            if (busy) errors++;
            resolve();
          });
          socket.on("connect", next);
        }),
    ),
  );
  const cpu = process.cpuUsage(cpuBefore);
  const sorted = Float64Array.from(latencies).sort();
  const answered = ok + non2xx;
  return {
    ok,
    non2xx,
    errors,
    seconds: (last - first) / 1000,
    p50: Math.round(percentile(sorted, 50)),
    p99: Math.round(percentile(sorted, 99)),
    generatorCpuMicros: answered ? (cpu.user + cpu.system) / answered : 0,
  };
}
