import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import http2 from "node:http2";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { listen } from "../../edge/listen.ts";
import { createTestDatabase, type TestDatabase } from "../support/database.ts";
import { startServe, type ServeProcess } from "../support/process.ts";
import { startListenerProcess, type ListenerProcess } from "../support/listener-process.ts";

/** Opens a raw TCP connection and sends `bytes` (nothing when empty). */
function rawSocket(port: number, bytes: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1", () => {
      if (bytes) socket.write(bytes);
      resolve(socket);
    });
    socket.once("error", reject);
  });
}

/**
 * Each connection's first bytes decide HTTP/1.1 or HTTP/2 (edge/listen.ts). A connection that
 * sends only the start of the HTTP/2 preface, or nothing, must not hold up anyone else, also after
 * it leaves. Against a real `outpost serve`, so a stuck event loop shows as a /healthz that does
 * not answer instead of a test process that never ends.
 */
describe("protocol detection on both listeners", function () {
  this.timeout(120_000);
  let dataDir: string;
  let database: TestDatabase | undefined;
  let serve: ServeProcess | undefined;

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "outpost-detect-"));
    if (process.env.DATABASE_URL) database = await createTestDatabase();
    serve = await startServe({ DATA_DIR: dataDir, DATABASE_URL: database?.url ?? "" });
  });

  after(async () => {
    // A process whose event loop is stuck does not act on SIGTERM.
    const killer = setTimeout(() => serve?.child.kill("SIGKILL"), 15_000);
    await serve?.stop();
    clearTimeout(killer);
    await database?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** /healthz on both ports, each within 5 s (a stuck process answers never). */
  async function bothHealthy(): Promise<void> {
    for (const port of [serve!.port, serve!.gamePort]) {
      const res = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(5_000) });
      assert.equal(res.status, 200, `port ${port}`);
    }
  }

  for (const partial of ["P", "PR", "PRI * HT"]) {
    it(`a connection that sends only ${JSON.stringify(partial)} holds up neither port, while open or after it closes`, async () => {
      const sockets = await Promise.all([serve!.port, serve!.gamePort].map((port) => rawSocket(port, partial)));
      await bothHealthy();
      for (const socket of sockets) socket.destroy();
      await bothHealthy();
    });
  }

  it("a connection that sends one byte at a time still becomes HTTP/1.1", async () => {
    const socket = await rawSocket(serve!.port, "");
    const reply = new Promise<string>((resolve) => {
      let text = "";
      socket.on("data", (chunk) => {
        text += chunk;
        if (text.includes("\r\n\r\n")) resolve(text);
      });
    });
    for (const byte of "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n") {
      socket.write(byte);
      await new Promise((resolve) => setImmediate(resolve));
    }
    assert.match(await reply, /^HTTP\/1\.1 200/);
    socket.destroy();
  });
});

describe("protocol detection timeout", () => {
  let listener: ListenerProcess;

  before(async () => {
    listener = await startListenerProcess({ protocolDetectionMs: 200 });
  });
  after(() => listener.stop());

  const closed = (socket: net.Socket) => new Promise<void>((resolve) => socket.once("close", () => resolve()));

  for (const bytes of ["", "P", "PR"]) {
    it(`closes a connection that sends ${bytes ? JSON.stringify(bytes) : "nothing"} and then waits`, async () => {
      const socket = await rawSocket(listener.port, bytes);
      await closed(socket);
      const res = await fetch(`http://127.0.0.1:${listener.port}/`, { signal: AbortSignal.timeout(5_000) });
      assert.equal(await res.text(), "ok");
    });
  }

  it("leaves a connection alone once a server owns it (HTTP/1.1 keep-alive answers after the detection time)", async () => {
    const socket = await rawSocket(listener.port, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    let text = "";
    socket.on("data", (chunk) => (text += chunk));
    await new Promise((resolve) => setTimeout(resolve, 500));
    socket.write("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    await closed(socket);
    assert.equal(text.match(/HTTP\/1\.1 200/g)?.length, 2);
  });
});

describe("HTTP/2 requests", () => {
  it("know their peer's address, as HTTP/1.1 requests do", async () => {
    const seen: Array<string | undefined> = [];
    const listener = await listen(
      (req, res) => {
        seen.push(req.socket.remoteAddress);
        res.end("ok");
      },
      0,
      "127.0.0.1",
    );
    try {
      const session = http2.connect(`http://127.0.0.1:${listener.port}`);
      await new Promise<void>((resolve, reject) => {
        const stream = session.request({ ":path": "/" });
        stream.on("error", reject);
        stream.on("end", () => resolve());
        stream.resume();
        stream.end();
      });
      session.close();
      await fetch(`http://127.0.0.1:${listener.port}/`);
      assert.deepEqual(seen, ["127.0.0.1", "127.0.0.1"]);
    } finally {
      await listener.close(0);
    }
  });
});

describe("HTTP/2 idle timeout", () => {
  let listener: ListenerProcess;

  before(async () => {
    listener = await startListenerProcess({ http2IdleMs: 300 });
  });
  after(() => listener.stop());

  const closed = (session: http2.ClientHttp2Session) => new Promise<void>((resolve) => session.once("close", () => resolve()));

  it("closes a connection that sent only the preface and its settings", async () => {
    const session = http2.connect(`http://127.0.0.1:${listener.port}`);
    session.on("error", () => {});
    await closed(session);
  });

  it("closes a connection that sent only part of the preface", async () => {
    const socket = await rawSocket(listener.port, "PRI * HTTP/2");
    socket.resume();
    await new Promise<void>((resolve) => socket.once("close", () => resolve()));
  });

  it("closes a connection once its last request is done and it stays quiet", async () => {
    const session = http2.connect(`http://127.0.0.1:${listener.port}`);
    const stream = session.request({ ":path": "/" });
    stream.setEncoding("utf8");
    let text = "";
    stream.on("data", (chunk) => (text += chunk));
    await new Promise((resolve) => stream.on("end", resolve));
    assert.equal(text, "ok");
    await closed(session);
  });

  it("keeps a connection whose stream sends something more often than the timeout (the agent's heartbeats)", async () => {
    const session = http2.connect(`http://127.0.0.1:${listener.port}`);
    let sessionClosed = false;
    session.on("close", () => (sessionClosed = true));
    const stream = session.request({ ":path": "/echo", ":method": "POST" });
    stream.setEncoding("utf8");
    let echoed = "";
    stream.on("data", (chunk) => (echoed += chunk));
    // Ten beats 100 ms apart: a second in all, over three times the idle timeout.
    for (let i = 0; i < 10; i++) {
      stream.write(String(i));
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal(sessionClosed, false);
    stream.end();
    await new Promise((resolve) => stream.on("end", resolve));
    assert.equal(echoed, "0123456789");
    session.close();
  });
});
