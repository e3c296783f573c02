import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TLSSocket } from "node:tls";
import { classifyAddress } from "../../core/outbound/address-policy.ts";
import { createDnsResolver } from "../../core/outbound/dns.ts";
import { createOutboundSender, type Resolver } from "../../core/outbound/sender.ts";
import { startDnsStandIn, type DnsStandIn } from "../support/dns-server.ts";
import { startHttpReceiver, type HttpReceiver } from "../support/receivers.ts";

/** A resolver that answers from a table, counting its calls, as DNS would for these names. */
function fakeDns(table: Record<string, string[]>): Resolver & { calls: string[] } {
  const calls: string[] = [];
  const resolve = async (hostname: string) => {
    calls.push(hostname);
    const addresses = table[hostname];
    if (!addresses) throw Object.assign(new Error("not found"), { code: "ENOTFOUND" });
    return addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
  };
  return Object.assign(resolve, { calls });
}

describe("outbound sender: SSRF rules, redirects, limits", () => {
  let receiver: HttpReceiver;
  before(async () => {
    receiver = await startHttpReceiver();
  });
  after(async () => {
    await receiver?.close();
  });
  beforeEach(() => {
    receiver.received.length = 0;
    receiver.behaviour = { status: 204 };
  });

  it("classifies private, loopback, link-local, CGNAT, unique-local, multicast and metadata addresses, also inside IPv6", () => {
    for (const address of [
      "10.0.0.1",
      "172.16.5.4",
      "192.168.1.1",
      "127.0.0.1",
      "169.254.169.254",
      "100.64.0.1",
      "100.100.100.200",
      "0.0.0.0",
      "224.0.0.1",
      "255.255.255.255",
      "::1",
      "::",
      "fd00:ec2::254",
      "fc00::1",
      "fe80::1",
      "ff02::1",
      "::ffff:127.0.0.1",
      "::ffff:a9fe:a9fe",
      "::7f00:1",
      "64:ff9b::a00:1",
      "2002:a00:1::1",
    ]) {
      assert.ok(classifyAddress(address), `${address} must be refused`);
    }
    for (const address of ["93.184.216.34", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8"]) {
      assert.equal(classifyAddress(address), undefined, `${address} is public`);
    }
  });

  it("refuses http://169.254.169.254/ and http://10.0.0.1/ whether or not local development is allowed", async () => {
    for (const allowLocal of [false, true]) {
      const sender = createOutboundSender({ allowLocal });
      // 0x7f.1 and [::127.0.0.1] are 127.0.0.1 written otherwise: loopback, which local development allows.
      const urls = [
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/",
        "https://10.0.0.1/",
        "https://[::ffff:169.254.169.254]/",
        ...(allowLocal ? [] : ["https://0x7f.1/", "https://[::127.0.0.1]/"]),
      ];
      for (const url of urls) {
        const outcome = await sender.send({ url, body: "{}" });
        assert.equal(outcome.ok, false);
        assert.equal(outcome.failure, "refused", `${url}: ${outcome.error}`);
        assert.equal(outcome.status, 0);
        if (allowLocal) assert.match(outcome.error, /(link-local|private) address/);
      }
    }
  });

  it("refuses a host name that resolves to 127.0.0.1 (or to any refused address) when local development is not allowed", async () => {
    const dns = fakeDns({ "hooks.example.test": ["127.0.0.1"], "mixed.example.test": ["93.184.216.34", "10.1.2.3"] });
    const sender = createOutboundSender({ allowLocal: false, resolve: dns });
    const loopback = await sender.send({ url: `https://hooks.example.test:${receiver.port}/`, body: "{}" });
    assert.equal(loopback.failure, "refused");
    assert.match(loopback.error, /hooks\.example\.test resolves to 127\.0\.0\.1 is a loopback address/);
    const mixed = await sender.send({ url: "https://mixed.example.test/", body: "{}" });
    assert.equal(mixed.failure, "refused");
    assert.match(mixed.error, /10\.1\.2\.3 is a private address/);
    const local = await sender.send({ url: `https://localhost:${receiver.port}/`, body: "{}" });
    assert.equal(local.failure, "refused");
    assert.match(local.error, /must not point at localhost/);
    const plain = await sender.send({ url: "http://example.com/", body: "{}" });
    assert.equal(plain.failure, "refused");
    assert.match(plain.error, /must use https/);
    assert.equal(receiver.received.length, 0, "nothing reached the receiver");
  });

  it("connects to the address it checked, with the URL's host in the Host header (no second lookup)", async () => {
    const dns = fakeDns({ "receiver.example.test": ["127.0.0.1"] });
    const sender = createOutboundSender({ allowLocal: true, resolve: dns });
    const outcome = await sender.send({ url: `http://receiver.example.test:${receiver.port}/hook?x=1`, headers: { "x-test": "yes" }, body: '{"a":1}' });
    assert.equal(outcome.ok, true, outcome.error);
    assert.equal(outcome.status, 204);
    assert.equal(outcome.address, "127.0.0.1");
    assert.deepEqual(dns.calls, ["receiver.example.test"]);
    const [request] = receiver.received;
    assert.equal(request.headers.host, `receiver.example.test:${receiver.port}`);
    assert.equal(request.path, "/hook?x=1");
    assert.equal(request.headers["x-test"], "yes");
    assert.equal(request.body, '{"a":1}');
  });

  it("does not follow a redirect, here to a private address: the delivery fails and says where it pointed", async () => {
    receiver.behaviour = { status: 302, headers: { location: "http://10.0.0.1/internal" } };
    const sender = createOutboundSender({ allowLocal: true });
    const outcome = await sender.send({ url: `${receiver.origin}/hook`, body: "{}" });
    assert.equal(outcome.ok, false);
    assert.equal(outcome.failure, "redirect");
    assert.equal(outcome.status, 302);
    assert.match(outcome.error, /redirect to http:\/\/10\.0\.0\.1\/internal, which Outpost does not follow/);
    assert.equal(receiver.received.length, 1);
  });

  it("reports a 500, a target that never answers (timeout) and a closed connection as failures", async () => {
    const sender = createOutboundSender({ allowLocal: true, timeoutMs: 500 });
    receiver.behaviour = { status: 500, body: "boom" };
    const failed = await sender.send({ url: receiver.origin, body: "{}" });
    assert.deepEqual([failed.ok, failed.status, failed.failure, failed.error, failed.responseBody], [false, 500, "http_status", "answered 500", "boom"]);
    receiver.behaviour = "hang";
    const hung = await sender.send({ url: receiver.origin, body: "{}" });
    assert.deepEqual([hung.ok, hung.status, hung.failure], [false, 0, "timeout"]);
    assert.match(hung.error, /no answer in time \(0\.5 s\)/);
    receiver.behaviour = "close";
    const closed = await sender.send({ url: receiver.origin, body: "{}" });
    assert.deepEqual([closed.ok, closed.failure], [false, "connection"]);
    assert.match(closed.error, /closed before an answer/);
  });

  it("reads at most the cap of an answer's body", async () => {
    receiver.behaviour = { status: 200, body: "x".repeat(200_000) };
    const outcome = await createOutboundSender({ allowLocal: true, maxResponseBytes: 1024 }).send({ url: receiver.origin, body: "" });
    assert.equal(outcome.ok, true);
    assert.equal(outcome.truncated, true);
    assert.equal(outcome.responseBody.length, 1024);
  });

  describe("name resolution over DNS (c-ares, not the thread pool's getaddrinfo)", () => {
    let dns: DnsStandIn;
    before(async () => {
      dns = await startDnsStandIn({ "receiver.example.test": ["127.0.0.1"], "inside.example.test": ["93.184.216.34", "fd00::5"], "v6.example.test": ["::1"] });
    });
    after(async () => {
      await dns?.close();
    });
    beforeEach(() => {
      dns.silent = false;
      dns.questions.length = 0;
    });

    it("asks the name servers for A and AAAA, checks every answer and connects to the checked address", async () => {
      const sender = createOutboundSender({ allowLocal: true, resolve: createDnsResolver({ servers: [dns.server] }) });
      const outcome = await sender.send({ url: `http://receiver.example.test:${receiver.port}/hook`, body: "{}" });
      assert.equal(outcome.ok, true, outcome.error);
      assert.equal(outcome.address, "127.0.0.1");
      assert.deepEqual(dns.questions.sort(), ["receiver.example.test A", "receiver.example.test AAAA"]);
      assert.equal(receiver.received[0].headers.host, `receiver.example.test:${receiver.port}`);
      // An AAAA answer in a refused range is caught though the A answer is public.
      const inside = await createOutboundSender({ allowLocal: false, resolve: createDnsResolver({ servers: [dns.server] }) }).send({
        url: "https://inside.example.test/",
        body: "{}",
      });
      assert.equal(inside.failure, "refused");
      assert.match(inside.error, /fd00::5 is a unique-local address/);
      const unknown = await sender.send({ url: "http://nowhere.example.test/", body: "{}" });
      assert.equal(unknown.failure, "dns");
      assert.match(unknown.error, /nowhere\.example\.test could not be resolved \(ENOTFOUND\)/);
    });

    it("gives up on a silent name server after its tries with a clear DNS error, well before the send's own bound", async () => {
      dns.silent = true;
      const sender = createOutboundSender({ allowLocal: true, timeoutMs: 5_000, resolve: createDnsResolver({ servers: [dns.server], timeoutMs: 200, tries: 2 }) });
      const started = Date.now();
      const outcome = await sender.send({ url: `http://receiver.example.test:${receiver.port}/`, body: "{}" });
      assert.equal(outcome.failure, "dns", outcome.error);
      assert.match(outcome.error, /the DNS lookup of receiver\.example\.test timed out/);
      assert.ok(Date.now() - started < 4_000, `took ${Date.now() - started} ms`);
      assert.ok(dns.questions.length >= 2, "the stand-in was asked");
      assert.equal(receiver.received.length, 0);
    });

    it("resolves localhost to loopback without asking DNS, for local development only", async () => {
      const resolve = createDnsResolver({ servers: [dns.server] });
      const outcome = await createOutboundSender({ allowLocal: true, resolve }).send({ url: `http://localhost:${receiver.port}/`, body: "{}" });
      assert.equal(outcome.ok, true, outcome.error);
      assert.equal(dns.questions.length, 0);
      const strict = await createOutboundSender({ allowLocal: false, resolve }).send({ url: `https://localhost:${receiver.port}/`, body: "{}" });
      assert.equal(strict.failure, "refused");
    });
  });

  describe("over TLS", () => {
    let dir: string;
    let server: ReturnType<typeof createHttpsServer>;
    let port: number;
    const serverNames: Array<string | false | null> = [];
    let cert: Buffer;
    before(async () => {
      dir = mkdtempSync(join(tmpdir(), "outpost-tls-"));
      execFileSync(
        "openssl",
        [
          "req",
          "-x509",
          "-newkey",
          "ec",
          "-pkeyopt",
          "ec_paramgen_curve:P-256",
          "-nodes",
          "-days",
          "1",
          "-subj",
          "/CN=hooks.example.test",
          "-addext",
          "subjectAltName=DNS:hooks.example.test",
          "-keyout",
          join(dir, "key.pem"),
          "-out",
          join(dir, "cert.pem"),
        ],
        { stdio: "ignore" },
      );
      cert = readFileSync(join(dir, "cert.pem"));
      server = createHttpsServer({ key: readFileSync(join(dir, "key.pem")), cert }, (req, res) => {
        serverNames.push((req.socket as TLSSocket).servername);
        res.writeHead(200).end("ok");
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      port = (server.address() as AddressInfo).port;
    });
    after(async () => {
      await new Promise((resolve) => server?.close(resolve));
      rmSync(dir, { recursive: true, force: true });
    });

    it("sends the URL's host as the TLS server name and checks the certificate against it, though it connects to the pinned address", async () => {
      const dns = fakeDns({ "hooks.example.test": ["127.0.0.1"], "other.example.test": ["127.0.0.1"] });
      const sender = createOutboundSender({ allowLocal: true, resolve: dns, ca: cert });
      const outcome = await sender.send({ url: `https://hooks.example.test:${port}/`, body: "{}" });
      assert.equal(outcome.ok, true, outcome.error);
      assert.deepEqual(serverNames, ["hooks.example.test"]);
      const wrongName = await sender.send({ url: `https://other.example.test:${port}/`, body: "{}" });
      assert.equal(wrongName.failure, "connection");
      assert.match(wrongName.error, /certificate was not accepted/);
    });
  });
});
