import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { agentKeyHeader } from "../../contract/credentials.ts";
import { createTestDatabase, type TestDatabase } from "../support/database.ts";
import { startServe, type ServeProcess } from "../support/process.ts";
import { seedGameOAuth } from "../support/game-oauth.ts";
import { brotliBomb, connectStreamCall, gzipBomb, memoryOf, rawRequest, resetPeak, type RawAnswer } from "../support/bombs.ts";

const gib = 1024 * 1024 * 1024;
const mib = 1024 * 1024;
/** How much the server's peak resident memory may grow while it answers one request. */
const allowedGrowth = 100 * mib;

const unaryPath = "/api/rpc/outpost.auth.v1.AuthService/GetSession";
const agentPath = "/api/rpc/outpost.agent.v1.AgentService/Connect";
const unaryHeaders = { "content-type": "application/proto", "connect-protocol-version": "1" };

/**
 * Compressed bodies that decompress to a gigabyte, sent to the real `outpost serve` at /api/rpc
 * (a unary procedure over HTTP/1.1, the agent's stream over h2c): each is refused with a clear
 * Connect error or a 413, never a 500, and the process's peak resident memory (VmHWM) stays
 * within {@link allowedGrowth} of its resident memory before that request. A garbage collection
 * that happens to run during a request can lift the peak by itself (it was once 118 MiB on the
 * embedded database in the full suite, whose RSS then fell to half), so a request over the bound
 * is sent once more and the smaller growth counts: a body that really is held in memory grows the
 * peak by hundreds of MiB every time.
 */
describe("request size: compression bombs and oversized bodies at /api/rpc", function () {
  this.timeout(180_000);
  let dataDir: string;
  let database: TestDatabase | undefined;
  let serve: ServeProcess;
  let agentKey: string;

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "outpost-bombs-"));
    if (process.env.DATABASE_URL) database = await createTestDatabase();
    serve = await startServe({ DATA_DIR: dataDir, DATABASE_URL: database?.url ?? "" });
    ({ agentKey } = await seedGameOAuth(`http://127.0.0.1:${serve.port}`, ["http://127.0.0.1:9/callback"]));
    // A few ordinary calls first, so the baseline includes what serving normally costs.
    for (let i = 0; i < 5; i++) await rawRequest(serve.port, "POST", unaryPath, unaryHeaders, Buffer.alloc(0));
  });

  after(async () => {
    await serve?.stop();
    await database?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /**
   * Sends the request and returns its answer; the peak's growth while it was answered stays
   * bounded, in one of two tries (see above). The figures are in the message.
   */
  const bounded = async <T>(what: string, send: () => Promise<T>): Promise<T> => {
    const tries: string[] = [];
    for (let attempt = 0; attempt < 2; attempt++) {
      resetPeak(serve.child.pid!);
      const before = memoryOf(serve.child.pid!).rss;
      const answer = await send();
      const { rss, peak } = memoryOf(serve.child.pid!);
      const grown = peak - before;
      if (grown < allowedGrowth) return answer;
      tries.push(
        `peak RSS grew by ${(grown / mib).toFixed(0)} MiB (RSS before ${(before / mib).toFixed(0)} MiB, peak ${(peak / mib).toFixed(0)} MiB, RSS now ${(rss / mib).toFixed(0)} MiB)`,
      );
    }
    assert.fail(`${what}: ${tries.join("; then ")}`);
  };

  /** A unary refusal: 413 from the edge, or Connect's resource_exhausted (429); never a 500. */
  const assertRefused = (answer: RawAnswer) => {
    assert.notEqual(answer.status, 500, answer.text);
    assert.ok(answer.status === 413 || answer.status === 429, `status ${answer.status}: ${answer.text}`);
    const body = JSON.parse(answer.text) as { code: string; message: string };
    assert.equal(body.code, "resource_exhausted", answer.text);
    assert.doesNotMatch(answer.text, /\n\s+at /, "no stack trace");
  };

  it("refuses a declared Content-Length over the limit at once, without waiting for the body", async () => {
    const answer = await bounded("declared 1 GiB", () =>
      Promise.race([rawRequest(serve.port, "POST", unaryPath, { ...unaryHeaders, "content-length": String(gib) }), sleep(20_000).then(() => undefined)]),
    );
    assert.ok(answer, "the server waited for a body it should have refused by its declared length");
    assert.equal(answer.status, 413, answer.text);
    assert.equal((JSON.parse(answer.text) as { code: string }).code, "resource_exhausted");
  });

  it("unary, gzip: 1 GiB of zeros in 1 MB with its Content-Length", async () => {
    const answer = await bounded("unary gzip 1 GiB", async () =>
      rawRequest(serve.port, "POST", unaryPath, { ...unaryHeaders, "content-encoding": "gzip" }, gzipBomb(gib)),
    );
    assertRefused(answer);
  });

  it("unary, gzip: the same sent chunked, without a Content-Length", async () => {
    const answer = await bounded("unary gzip 1 GiB chunked", async () =>
      rawRequest(serve.port, "POST", unaryPath, { ...unaryHeaders, "content-encoding": "gzip", "transfer-encoding": "chunked" }, gzipBomb(gib)),
    );
    assertRefused(answer);
  });

  it("unary, gzip: 60 MiB of zeros in 62 KB, under the compressed limit", async () => {
    const answer = await bounded("unary gzip 60 MiB", async () =>
      rawRequest(serve.port, "POST", unaryPath, { ...unaryHeaders, "content-encoding": "gzip" }, gzipBomb(60 * mib)),
    );
    assertRefused(answer);
  });

  it("unary, brotli: 1 GiB of zeros in 2 KB", async () => {
    const answer = await bounded("unary brotli 1 GiB", async () =>
      rawRequest(serve.port, "POST", unaryPath, { ...unaryHeaders, "content-encoding": "br" }, await brotliBomb(gib)),
    );
    assertRefused(answer);
  });

  for (const [name, encoding, bytes] of [
    ["gzip: 1 GiB of zeros in one 1 MB message", "gzip", gib],
    ["gzip: 512 MiB of zeros in one 0.5 MB message", "gzip", 512 * mib],
    ["brotli: 1 GiB of zeros in one 2 KB message", "br", gib],
  ] as const) {
    it(`the agent's stream over h2c, ${name}`, async () => {
      const bomb = encoding === "gzip" ? gzipBomb(bytes) : await brotliBomb(bytes);
      const answer = await bounded(`agent stream ${name}`, () => connectStreamCall(serve.port, agentPath, { [agentKeyHeader]: agentKey }, encoding, bomb));
      assert.notEqual(answer.status, 500);
      assert.equal(answer.error?.code, "resource_exhausted", JSON.stringify(answer));
    });
  }
});
