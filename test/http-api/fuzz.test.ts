import assert from "node:assert/strict";
import { request } from "node:http";
import { ScalarType, type DescField } from "@bufbuild/protobuf";
import { createProcedureMap, type Procedure } from "../../edge/http-api/router.ts";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";

/** A small seeded generator (mulberry32), so a failing case can be replayed. */
function random(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    int: (n: number) => Math.floor(next() * n),
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)],
    chance: (p: number) => next() < p,
  };
}

type Rng = ReturnType<typeof random>;

interface RawRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
}

const strangeStrings = [
  "",
  " ",
  "x".repeat(300),
  "x".repeat(70_000),
  "\u0000",
  "💥🔥",
  "\uD800",
  "../../etc/passwd",
  "' or 1=1 --",
  "<script>alert(1)</script>",
  "%00",
  "NaN",
  "-1",
  "1e309",
  "true",
  "00000000-0000-0000-0000-000000000000",
  "ffffffff-ffff-ffff-ffff-ffffffffffff",
  "not-a-uuid",
  "minecraft",
  "MINECRAFT",
  "GAME_MINECRAFT",
  "owner",
  "2026-13-45T99:99:99Z",
  "9999-12-31T23:59:59Z",
  "opk_" + "A".repeat(40),
];

const strangeValues: unknown[] = [null, true, false, 0, -1, 1.5, 2 ** 31, -(2 ** 63), 1e308, [], [1, "a"], {}, { nested: { deep: [] } }, ...strangeStrings];

/** A value of the wrong shape (or a hostile one) for a field. */
function badValue(rng: Rng): unknown {
  return rng.pick(strangeValues);
}

function fieldValue(field: DescField, rng: Rng): unknown {
  if (rng.chance(0.6)) return badValue(rng);
  switch (field.fieldKind) {
    case "scalar":
      return field.scalar === ScalarType.STRING
        ? rng.pick(strangeStrings)
        : field.scalar === ScalarType.BOOL
          ? rng.pick(["yes", 1, "true"])
          : rng.pick(["12", 1e20, -5, "abc"]);
    case "enum":
      return rng.pick(["unspecified", "UNKNOWN", 99, "", ...field.enum.values.map((v) => v.name)]);
    case "list":
      return Array.from({ length: rng.int(4) }, () => badValue(rng));
    default:
      return badValue(rng);
  }
}

function queryFor(procedure: Procedure, rng: Rng): string {
  const params = new URLSearchParams();
  for (const field of procedure.method.input.fields) {
    if (rng.chance(0.7)) {
      const times = rng.chance(0.2) ? 2 : 1;
      for (let i = 0; i < times; i++) params.append(field.jsonName, String(fieldValue(field, rng)));
    }
  }
  if (rng.chance(0.3)) params.append(rng.pick(["unknown", "__proto__", "constructor", "limit[]", "a.b"]), rng.pick(strangeStrings));
  let query = params.toString();
  if (rng.chance(0.1)) query += rng.pick(["&%zz=1", "&=&&", "&%E0%A4%A=x", "&" + "k=v&".repeat(200)]);
  return query;
}

function bodyFor(procedure: Procedure, rng: Rng): { body: Buffer; type: string } {
  const type = rng.chance(0.85)
    ? "application/json"
    : rng.pick(["text/plain", "application/x-www-form-urlencoded", "application/json; charset=latin1", "", "application/xml"]);
  const variant = rng.int(10);
  if (variant === 0) return { type, body: Buffer.from(rng.pick(["{", "[", "nul", "{'a':1}", '{"a":1,}', "\u0000", '"string"', "42", "[[[[[[[[[[[["])) };
  if (variant === 1) return { type, body: Buffer.from([0xff, 0xfe, 0x7b, 0x22, 0xc3, 0x28, 0x7d]) };
  if (variant === 2) return { type, body: Buffer.from("[".repeat(20_000) + "]".repeat(20_000)) };
  const json: Record<string, unknown> = {};
  for (const field of procedure.method.input.fields) {
    if (rng.chance(0.7)) json[rng.chance(0.1) ? field.name : field.jsonName] = fieldValue(field, rng);
  }
  if (rng.chance(0.3)) json[rng.pick(["__proto__", "extra", "constructor", ""])] = badValue(rng);
  return { type, body: Buffer.from(JSON.stringify(json)) };
}

function send(baseUrl: string, req: RawRequest): Promise<number> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const r = request({ host: url.hostname, port: url.port, method: req.method, path: req.path, headers: req.headers, agent: false }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    r.on("error", (error: NodeJS.ErrnoException) => (error.code === "ECONNRESET" ? resolve(-1) : reject(error)));
    if (req.body) r.setHeader("content-length", req.body.length);
    r.end(req.body);
  });
}

describe("http api: fuzzing with malformed requests", function () {
  this.timeout(300_000);
  let t: TestOutpost;
  let key: string;
  let cookie: string;

  before(async () => {
    t = await startTestOutpost({ RATE_LIMIT_PER_MINUTE: "1000000" });
    const res = await fetch(`${t.baseUrl}/sign-up`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: "fuzz@example.com", password: "a long password", name: "Fuzz" }),
    });
    cookie = res.headers.get("set-cookie")!.split(";")[0];
    const created = await fetch(`${t.baseUrl}/api/http/auth/createApiKey`, {
      method: "POST",
      headers: { "content-type": "application/json", cookie },
      body: JSON.stringify({ name: "fuzz" }),
    });
    key = ((await created.json()) as { key: string }).key;
    const org = await fetch(`${t.baseUrl}/api/http/organizations/createOrganization`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": key },
      body: JSON.stringify({ name: "Fuzz", slug: "fuzz" }),
    });
    assert.equal(org.status, 200);
  });
  after(async () => {
    await t?.close();
  });

  it("answers at least 2,000 malformed requests across every procedure without a 5xx", async () => {
    const procedures = [...createProcedureMap().values()].flatMap((router) => [...router.values()]);
    assert.ok(procedures.length >= 25, `only ${procedures.length} procedures`);
    const rng = random(20261123);
    const requests: RawRequest[] = [];
    const perProcedure = Math.ceil(2200 / procedures.length);
    for (const procedure of procedures) {
      const path = `/api/http/${procedure.router}/${procedure.name}`;
      for (let i = 0; i < perProcedure; i++) {
        const headers: Record<string, string> = {};
        const credential = rng.int(10);
        if (credential < 7) headers["x-api-key"] = key;
        else if (credential === 7) headers.cookie = cookie;
        else if (credential === 8) headers["x-api-key"] = rng.pick(strangeStrings.filter((s) => !/[\u0000\uD800💥🔥]/.test(s)));
        const kind = rng.int(10);
        if (kind === 0) {
          requests.push({ method: rng.pick(["PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "TRACE"]), path, headers });
        } else if (kind === 1) {
          const segment = rng.pick(["", "..", "%2e%2e", "x".repeat(2000), "%00", "a/b/c", "%zz"]);
          requests.push({ method: rng.pick(["GET", "POST"]), path: `/api/http/${procedure.router}/${segment}`, headers });
        } else if (procedure.httpMethod === "GET" || kind === 2) {
          requests.push({ method: procedure.httpMethod === "GET" && kind !== 2 ? "GET" : "POST", path: `${path}?${queryFor(procedure, rng)}`, headers });
        } else {
          const { body, type } = bodyFor(procedure, rng);
          if (type) headers["content-type"] = type;
          requests.push({ method: "POST", path: rng.chance(0.1) ? `${path}?${queryFor(procedure, rng)}` : path, headers, body });
        }
      }
    }
    assert.ok(requests.length >= 2000);

    const failures: string[] = [];
    const statuses = new Map<number, number>();
    for (let i = 0; i < requests.length; i += 16) {
      const batch = requests.slice(i, i + 16);
      const results = await Promise.all(batch.map((req) => send(t.baseUrl, req)));
      results.forEach((status, j) => {
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        // Node refuses a request head over 16 KiB itself: 431, and the connection is closed
        // (the client may see the reset before the answer). That is the right refusal too.
        const head = batch[j].path.length + Object.entries(batch[j].headers).reduce((n, [k, v]) => n + k.length + v.length, 0);
        const oversize = head > 16_000;
        if (oversize && (status === 431 || status === -1)) return;
        if (status >= 500 || status <= 0) {
          const req = batch[j];
          failures.push(`${status} ${req.method} ${req.path.slice(0, 200)} ${req.body?.toString("utf8").slice(0, 200) ?? ""}`);
        }
      });
    }
    assert.deepEqual(failures, [], `${failures.length} requests failed with a 5xx`);
    // The malformed requests were refused for their malformation, not waved through.
    assert.ok((statuses.get(400) ?? 0) > requests.length / 3, `statuses: ${JSON.stringify([...statuses])}`);
    for (const status of statuses.keys()) assert.ok([-1, 200, 400, 401, 403, 404, 405, 409, 413, 415, 431].includes(status), `unexpected ${status}`);
  });
});
