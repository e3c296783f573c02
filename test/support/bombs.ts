/**
 * Compression "bombs" and the raw requests that carry them, for the request-size suites: bodies a
 * few kilobytes on the wire that decompress to a gigabyte. Built without ever holding what they
 * decompress to.
 */
import http from "node:http";
import http2 from "node:http2";
import { readFileSync, writeFileSync } from "node:fs";
import zlib from "node:zlib";

const mib = 1024 * 1024;

/**
 * `bytes` of zeros (a whole number of MiB) as gzip: one compressed MiB repeated as gzip members,
 * which a gzip reader joins (RFC 1952 §2.2).
 */
export function gzipBomb(bytes: number): Buffer {
  const member = zlib.gzipSync(Buffer.alloc(mib), { level: 9 });
  return Buffer.concat(Array.from({ length: Math.ceil(bytes / mib) }, () => member));
}

/** `bytes` of zeros as brotli, compressed as they stream through (a GiB gives under 2 KB). */
export async function brotliBomb(bytes: number): Promise<Buffer> {
  const zeros = Buffer.alloc(mib);
  const compressor = zlib.createBrotliCompress({ params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 4, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: bytes } });
  const out: Buffer[] = [];
  compressor.on("data", (chunk: Buffer) => out.push(chunk));
  const ended = new Promise((resolve, reject) => compressor.on("end", resolve).on("error", reject));
  for (let sent = 0; sent < bytes; sent += mib) {
    if (!compressor.write(zeros)) await new Promise((resolve) => compressor.once("drain", resolve));
  }
  compressor.end();
  await ended;
  return Buffer.concat(out);
}

/** A process's resident memory now and at its peak, in bytes (Linux /proc). */
export function memoryOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)![1]) * 1024;
  return { rss: kib("VmRSS"), peak: kib("VmHWM") };
}

/** Sets a process's recorded peak back to its resident memory now (Linux: clear_refs "5"). */
export function resetPeak(pid: number): void {
  writeFileSync(`/proc/${pid}/clear_refs`, "5");
}

export interface RawAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/**
 * An HTTP/1.1 request with exactly these headers and body (none: only the head is sent, and the
 * request stays open). Resolves with the answer as soon as it is complete, whether or not the
 * server read the body; a write failing after the server answered and closed is not an error.
 */
export function rawRequest(port: number, method: string, path: string, headers: Record<string, string>, body?: Buffer): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, method, path, headers, agent: false });
    let answered = false;
    req.on("response", (res) => {
      answered = true;
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => {
        resolve({ status: res.statusCode!, headers: res.headers, text: Buffer.concat(chunks).toString("utf8") });
        req.destroy();
      });
    });
    req.on("error", (error) => {
      if (!answered) reject(error);
    });
    if (body) req.end(body);
    else req.flushHeaders();
  });
}

/** A Connect envelope: flags (1 = compressed), the length, the bytes (Connect protocol, enveloped messages). */
export function envelope(flags: number, data: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt8(flags, 0);
  head.writeUInt32BE(data.length, 1);
  return Buffer.concat([head, data]);
}

export interface StreamAnswer {
  status: number;
  /** The end-of-stream message's error, if the stream ended with one. */
  error?: { code: string; message: string };
}

/**
 * One message, compressed with `encoding`, on a Connect streaming call over h2c (as the agent's
 * stream arrives), then the request side closes. Resolves with how the response ended.
 */
export function connectStreamCall(port: number, path: string, headers: Record<string, string>, encoding: "gzip" | "br", compressed: Buffer): Promise<StreamAnswer> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(`http://127.0.0.1:${port}`);
    session.on("error", reject);
    const stream = session.request({
      ":method": "POST",
      ":path": path,
      "content-type": "application/connect+proto",
      "connect-protocol-version": "1",
      "connect-content-encoding": encoding,
      ...headers,
    });
    let status = 0;
    const chunks: Buffer[] = [];
    stream.on("response", (h) => (status = Number(h[":status"])));
    stream.on("data", (chunk: Buffer) => chunks.push(chunk));
    stream.on("error", () => {});
    // The answer is complete at its end, whether or not the server read the rest of the request.
    stream.on("end", () => {
      session.destroy();
      const body = Buffer.concat(chunks);
      let error: StreamAnswer["error"];
      for (let at = 0; at + 5 <= body.length;) {
        const flags = body.readUInt8(at);
        const length = body.readUInt32BE(at + 1);
        const data = body.subarray(at + 5, at + 5 + length);
        if (flags & 0x02) error = (JSON.parse(data.toString("utf8")) as { error?: StreamAnswer["error"] }).error;
        at += 5 + length;
      }
      resolve({ status, error });
    });
    stream.end(envelope(1, compressed));
  });
}
