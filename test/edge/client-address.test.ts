import assert from "node:assert/strict";
import http, { type IncomingMessage } from "node:http";
import http2 from "node:http2";
import { createClientAddress, noProxies, type TrustedProxies } from "../../edge/client-address.ts";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";

/** A request from `peer` as Node presents it; a header given as an array is that many lines. */
const request = (peer: string, headers: Record<string, string | string[]> = {}) =>
  ({
    socket: { remoteAddress: peer },
    headers: Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, [value].flat().join(", ")])),
    rawHeaders: Object.entries(headers).flatMap(([name, value]) => [value].flat().flatMap((line) => [name, line])),
  }) as unknown as IncomingMessage;

describe("client address: the peer, or what a trusted proxy says", () => {
  describe("createClientAddress", () => {
    const xff: TrustedProxies = { entries: ["10.0.0.0/8", "fd00::/8", "192.0.2.7"], header: "x-forwarded-for" };
    const forwarded: TrustedProxies = { ...xff, header: "forwarded" };

    it("without trusted proxies, the peer is the client whatever the headers say", () => {
      const address = createClientAddress(noProxies);
      assert.equal(address(request("10.1.1.1", { "x-forwarded-for": "203.0.113.5", forwarded: "for=203.0.113.6" })), "10.1.1.1");
    });

    it("ignores the header from a peer that is not a trusted proxy", () => {
      assert.equal(createClientAddress(xff)(request("198.51.100.9", { "x-forwarded-for": "203.0.113.5" })), "198.51.100.9");
    });

    it("walks X-Forwarded-For from the right, skipping trusted hops", () => {
      const address = createClientAddress(xff);
      assert.equal(address(request("10.0.0.1", { "x-forwarded-for": "203.0.113.5" })), "203.0.113.5");
      // A client-supplied (forged) entry on the left is never reached.
      assert.equal(address(request("10.0.0.1", { "x-forwarded-for": "6.6.6.6, 203.0.113.5, 10.9.9.9, 192.0.2.7" })), "203.0.113.5");
      assert.equal(address(request("::ffff:10.0.0.1", { "x-forwarded-for": "2001:db8::5, fd00::1" })), "2001:db8::5");
      assert.equal(address(request("10.0.0.1", { "x-forwarded-for": "203.0.113.5:4711" })), "203.0.113.5");
      // Every hop trusted: the first one made the request.
      assert.equal(address(request("10.0.0.1", { "x-forwarded-for": "10.0.0.3, 10.0.0.2" })), "10.0.0.3");
    });

    it("falls back to the peer for a malformed value, and reads only the configured header", () => {
      const address = createClientAddress(xff);
      for (const value of ["", "not-an-ip", "203.0.113.5, ", "203.0.113.5,,10.0.0.2", "203.0.113.5 10.0.0.2", "unknown"]) {
        assert.equal(address(request("10.0.0.1", { "x-forwarded-for": value })), "10.0.0.1", value);
      }
      assert.equal(address(request("10.0.0.1", { forwarded: "for=203.0.113.5" })), "10.0.0.1");
      assert.equal(createClientAddress(forwarded)(request("10.0.0.1", { "x-forwarded-for": "203.0.113.5" })), "10.0.0.1");
    });

    it("reads RFC 7239 for= (quoted IPv6 with a port, other parameters, several elements)", () => {
      const address = createClientAddress(forwarded);
      assert.equal(address(request("10.0.0.1", { forwarded: "for=203.0.113.5;proto=https;by=10.0.0.1" })), "203.0.113.5");
      assert.equal(address(request("10.0.0.1", { forwarded: 'For="[2001:db8:cafe::17]:4711"' })), "2001:db8:cafe::17");
      assert.equal(address(request("10.0.0.1", { forwarded: 'for=6.6.6.6, for="203.0.113.5:80";proto=http, for=10.0.0.2' })), "203.0.113.5");
      for (const value of [
        "for=unknown",
        "for=_hidden",
        "proto=https",
        'for="[2001:db8::1]',
        "for=203.0.113.5:x",
        "for=2001:db8::1:80:x",
        "for=203.0.113.5;for=6.6.6.6",
        "x, for=203.0.113.5",
        "for=203.0.113.5 junk",
      ]) {
        assert.equal(address(request("10.0.0.1", { forwarded: value })), "10.0.0.1", value);
      }
    });

    it("a quote the client leaves open does not swallow what the proxy added: one line → the peer", () => {
      const address = createClientAddress(forwarded);
      // The client sent `for=6.6.6.6;x="`; the proxy appended its element to that line.
      for (const value of ['for=6.6.6.6;x=", for=203.0.113.5', 'for=6.6.6.6;x=", for="[2001:db8::5]"', 'for=6.6.6.6;x="\\", for=203.0.113.5']) {
        assert.equal(address(request("10.0.0.1", { forwarded: value })), "10.0.0.1", value);
      }
    });

    it("reads each header line on its own: the client's open quote stays in its own line, the proxy's line names the client", () => {
      const address = createClientAddress(forwarded);
      assert.equal(address(request("10.0.0.1", { forwarded: ['for=6.6.6.6;x="', "for=203.0.113.5"] })), "203.0.113.5");
      assert.equal(address(request("10.0.0.1", { forwarded: ["for=6.6.6.6", 'for=203.0.113.5;x="'] })), "10.0.0.1");
      assert.equal(address(request("10.0.0.1", { forwarded: ["for=6.6.6.6", "for=203.0.113.5, for=10.0.0.2"] })), "203.0.113.5");
      const xffAddress = createClientAddress(xff);
      assert.equal(xffAddress(request("10.0.0.1", { "x-forwarded-for": ["6.6.6.6", "203.0.113.5, 10.0.0.2"] })), "203.0.113.5");
      assert.equal(xffAddress(request("10.0.0.1", { "x-forwarded-for": ["6.6.6.6", "203.0.113.5 "] })), "203.0.113.5");
    });
  });

  /**
   * The whole service with the test's own address (127.0.0.1) as its one trusted proxy: the
   * per-IP limits (1 call a minute without a credential, 1 failed sign-in per address) count the
   * client each request names, on the account listener and on the game issuer alike.
   */
  describe("behind a trusted proxy", () => {
    let t: TestOutpost;
    const limits = { RATE_LIMIT_PER_MINUTE: "2", SIGN_IN_ATTEMPTS_PER_IP_PER_15_MIN: "1" };
    const rpc = (base: string, headers: Record<string, string>) =>
      fetch(`${base}/api/rpc/outpost.auth.v1.AuthService/GetSession`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: "{}" });
    const authorize = (base: string, headers: Record<string, string>) => fetch(`${base}/oauth2/authorize?client_id=ogc_unknown&response_type=code`, { headers });
    const signIn = (base: string, headers: Record<string, string>) =>
      fetch(`${base}/sign-in`, {
        method: "POST",
        headers: { "content-type": "application/json", origin: "http://localhost:3000", ...headers },
        body: JSON.stringify({ email: "nobody@example.com", password: "wrong password" }),
      });

    before(async () => {
      t = await startTestOutpost({ ...limits, TRUSTED_PROXIES: "127.0.0.1, ::1" });
    });
    after(async () => {
      await t?.close();
    });

    it("counts calls per forwarded client at /api/rpc and at the game issuer", async () => {
      const from = (ip: string) => ({ "x-forwarded-for": `${ip}, 127.0.0.1` });
      for (const [call, base] of [
        [rpc, t.baseUrl],
        [authorize, t.gameIssuerUrl],
      ] as const) {
        const prefix = call === rpc ? "198.51.100" : "198.51.101";
        assert.notEqual((await call(base, from(`${prefix}.1`))).status, 429);
        assert.notEqual((await call(base, from(`${prefix}.1`))).status, 429);
        assert.equal((await call(base, from(`${prefix}.1`))).status, 429, "the third call of one client is over the limit");
        assert.notEqual((await call(base, from(`${prefix}.2`))).status, 429, "another client behind the same proxy has its own count");
      }
    });

    it("counts failed sign-ins per forwarded client", async () => {
      const from = (ip: string) => ({ "x-forwarded-for": ip });
      assert.equal((await signIn(t.baseUrl, from("203.0.113.1"))).status, 401);
      assert.equal((await signIn(t.baseUrl, from("203.0.113.1"))).status, 429);
      assert.equal((await signIn(t.baseUrl, from("203.0.113.2"))).status, 401);
    });
  });

  /**
   * A client's own Forwarded header with a quote left open, behind a trusted proxy that appends
   * (to the same line, or as a line of its own), over HTTP/1.1 and HTTP/2: the client cannot pick
   * the address its calls count under (1 call a minute without a credential).
   */
  describe("behind a trusted proxy writing Forwarded", () => {
    let t: TestOutpost;

    before(async () => {
      t = await startTestOutpost({ RATE_LIMIT_PER_MINUTE: "1", TRUSTED_PROXIES: "127.0.0.1, ::1", TRUSTED_PROXY_HEADER: "forwarded" });
    });
    after(async () => {
      await t?.close();
    });

    const path = "/api/rpc/outpost.auth.v1.AuthService/GetSession";
    // Typed loosely: Node sends an array value as that many header lines, which its types do not allow for `forwarded`.
    const headers = (forwarded: string | string[]): Record<string, string> => ({ "content-type": "application/json", forwarded: forwarded as string });
    const viaHttp1 = (forwarded: string | string[]) =>
      new Promise<number>((resolve, reject) => {
        const req = http.request(`${t.baseUrl}${path}`, { method: "POST", headers: headers(forwarded) }, (res) => {
          res.resume();
          resolve(res.statusCode!);
        });
        req.on("error", reject);
        req.end("{}");
      });
    const viaHttp2 = (forwarded: string | string[]) =>
      new Promise<number>((resolve, reject) => {
        const session = http2.connect(t.baseUrl);
        session.on("error", reject);
        const stream = session.request({ ":method": "POST", ":path": path, ...headers(forwarded) });
        stream.on("response", (h) => {
          stream.resume();
          session.close();
          resolve(Number(h[":status"]));
        });
        stream.on("error", reject);
        stream.end("{}");
      });

    it("one line (the proxy appended to the client's): every call counts for the peer", async () => {
      assert.notEqual(await viaHttp1('for=6.6.6.1;x=", for=198.51.100.7'), 429);
      assert.equal(await viaHttp1('for=6.6.6.2;x=", for=198.51.100.7'), 429, "a second client-chosen address is the same client");
      assert.equal(await viaHttp2('for=6.6.6.3;x=", for=198.51.100.7'), 429);
    });

    it("two lines (the proxy added its own): the proxy's line names the client, whatever the client's says", async () => {
      for (const call of [viaHttp1, viaHttp2]) {
        const client = call === viaHttp1 ? "198.51.100.8" : "198.51.100.9";
        assert.notEqual(await call(['for=6.6.6.4;x="', `for=${client}`]), 429);
        assert.equal(await call(['for=6.6.6.5;x="', `for=${client}`]), 429);
      }
    });
  });

  describe("without a trusted proxy", () => {
    let t: TestOutpost;

    before(async () => {
      t = await startTestOutpost({ RATE_LIMIT_PER_MINUTE: "2" });
    });
    after(async () => {
      await t?.close();
    });

    it("ignores a spoofed X-Forwarded-For: every call counts for the peer", async () => {
      const call = (ip: string) =>
        fetch(`${t.baseUrl}/api/rpc/outpost.auth.v1.AuthService/GetSession`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-forwarded-for": ip, forwarded: `for=${ip}` },
          body: "{}",
        });
      assert.notEqual((await call("198.51.100.1")).status, 429);
      assert.notEqual((await call("198.51.100.2")).status, 429);
      assert.equal((await call("198.51.100.3")).status, 429);
    });
  });
});
