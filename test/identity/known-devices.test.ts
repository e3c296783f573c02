import assert from "node:assert/strict";
import { createClient } from "@connectrpc/connect";
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { createKnownDevices, knownDeviceLifetimeSeconds } from "../../core/auth/known-devices.ts";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a JSON body, read field by field as the test needs
type Json = Record<string, any>;
const password = "correct horse battery staple";
const owner = "owner@example.com";

/**
 * Targeted lockout: strangers' failures from many addresses spend an account's limit over all
 * addresses (and an address's own limit), after which its owner would be refused everywhere. A
 * browser that signed in to the account before holds a known-device cookie, which exempts it from
 * those two limits (OWASP's device cookies); it keeps a small limit of its own.
 */
describe("identity: known devices are not locked out", function () {
  this.timeout(60_000);
  let t: TestOutpost;
  let ownerDevice: string;
  let strangerDevice: string;

  before(async () => {
    t = await startTestOutpost({
      TRUSTED_PROXIES: "127.0.0.1, ::1",
      SIGN_IN_ATTEMPTS_PER_ACCOUNT_PER_HOUR: "20",
      SIGN_IN_ATTEMPTS_PER_IP_PER_15_MIN: "30",
    });
    const identity = createClient(IdentityService, t.outpost.runtime.core.transport());
    for (const email of [owner, "stranger@example.com"]) await identity.createUser({ email, password, name: "" });
  });
  after(() => t?.close());

  const signIn = (from: string, email: string, pass: string, cookie?: string) =>
    fetch(`${t.baseUrl}/sign-in`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-forwarded-for": from, ...(cookie && { cookie }) },
      body: JSON.stringify({ email, password: pass }),
    });
  const deviceCookie = (res: Response) => res.headers.getSetCookie().find((c) => c.startsWith("outpost_device="));
  /** The policy that refused a 429 (from RateLimit-Policy), else the status. */
  const policy = (res: Response) => (res.status === 429 ? /^"([a-z_]+)"/.exec(res.headers.get("ratelimit-policy") ?? "")?.[1] : res.status);

  it("a sign-in sets a long-lived HttpOnly known-device cookie; signing in again keeps the device", async () => {
    const first = await signIn("203.0.113.10", owner, password);
    assert.equal(first.status, 200);
    const set = deviceCookie(first)!;
    const maxAge = Number(/Max-Age=(\d+)/.exec(set)![1]);
    assert.match(set, /^outpost_device=opd_[0-9A-Za-z]{22}\.\d+\.[A-Za-z0-9_-]{43}; Path=\/; Max-Age=\d+; HttpOnly; SameSite=Lax$/);
    assert.ok(maxAge > knownDeviceLifetimeSeconds - 60 && maxAge <= knownDeviceLifetimeSeconds, `Max-Age ${maxAge}`);
    ownerDevice = set.split(";")[0];
    const again = await signIn("203.0.113.10", owner, password, ownerDevice);
    assert.equal(deviceCookie(again)!.split(".")[0], ownerDevice.split(".")[0], "the same device id, with a new expiry");
    const stranger = await signIn("198.51.100.1", "stranger@example.com", password);
    strangerDevice = deviceCookie(stranger)!.split(";")[0];
  });

  it("after strangers spend the account's limit from other addresses, only the owner's known browser gets in", async () => {
    for (const from of ["198.51.100.1", "198.51.100.2"]) {
      for (let i = 0; i < 10; i++) assert.equal((await signIn(from, owner, "wrong password")).status, 401);
    }
    // The account is now refused from any address that has no known-device cookie for it…
    assert.equal(policy(await signIn("203.0.113.10", owner, password)), "sign_in_account");
    assert.equal(policy(await signIn("203.0.113.11", owner, password)), "sign_in_account");
    // …a forged cookie, or another account's, changes nothing…
    // (a character in the middle of the signature: the last one has spare bits, see below)
    const forged = ownerDevice.replace(/(.{20})(.)$/, (_, middle: string, last: string) => `${middle.slice(0, -1)}${middle.at(-1) === "A" ? "B" : "A"}${last}`);
    assert.equal(policy(await signIn("203.0.113.10", owner, password, forged)), "sign_in_account");
    assert.equal(policy(await signIn("203.0.113.10", owner, password, strangerDevice)), "sign_in_account");
    // …and the owner's browser signs in, from home and from anywhere else.
    const home = await signIn("203.0.113.10", owner, password, ownerDevice);
    assert.equal(home.status, 200, await home.clone().text());
    assert.equal(((await home.json()) as Json).user.email, owner);
    assert.equal((await signIn("203.0.113.12", owner, password, ownerDevice)).status, 200);
    // The known-device sign-in is in the activity log as such.
    const rows = await t.outpost.runtime.orm.em
      .fork()
      .execute(`select details->>'knownDevice' as known from activity_events where action = 'user.signed_in' order by created_at desc limit 1`);
    assert.equal(rows[0].known, "true");
  });

  it("a known browser is exempt from its address's limit too, and has a small limit of its own", async () => {
    // Strangers at the owner's address (a shared network) spend the address's limit on other accounts.
    for (let i = 0; i < 30; i++) await signIn("203.0.113.20", `nobody-${i}@example.com`, "wrong password");
    assert.equal(policy(await signIn("203.0.113.20", "stranger@example.com", password)), "sign_in_ip");
    assert.equal((await signIn("203.0.113.20", owner, password, ownerDevice)).status, 200);
    // Someone holding the cookie but not the password: 10 guesses per 15 minutes, whatever the address.
    for (let i = 0; i < 10; i++) assert.equal((await signIn(`192.0.2.${i + 1}`, owner, "wrong password", ownerDevice)).status, 401);
    assert.equal(policy(await signIn("192.0.2.100", owner, password, ownerDevice)), "sign_in_device");
  });
});

describe("identity: known-device tokens", () => {
  const now = new Date("2030-01-01T00:00:00Z");
  const devices = createKnownDevices(() => "a key");

  it("are valid for their email until they expire, and for nothing else", () => {
    const { token, expiresAt } = devices.issue(owner, now);
    const id = devices.verify(token, owner, now);
    assert.match(id ?? "", /^[0-9A-Za-z]{22}$/);
    assert.equal(expiresAt.getTime(), now.getTime() + knownDeviceLifetimeSeconds * 1000);
    assert.equal(devices.verify(token, "other@example.com", now), undefined);
    assert.equal(devices.verify(token, owner, expiresAt), undefined, "expired");
    assert.equal(createKnownDevices(() => "another key").verify(token, owner, now), undefined, "another KEK's");
    const [head, expires, mac] = token.split(".");
    assert.equal(devices.verify(`${head}.${Number(expires) + 1000}.${mac}`, owner, now), undefined, "a moved expiry");
    for (const bad of ["", "opd_", `${token}x`, token.slice(0, -1)]) assert.equal(devices.verify(bad, owner, now), undefined, bad);
    assert.equal(devices.verify(devices.issue(owner, now, id).token, owner, now), id, "a re-issued token keeps its device");
  });

  it("refuse the same signature spelled another way (the last character's spare bits)", () => {
    const { token } = devices.issue(owner, now);
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    // 32 bytes in 43 characters: the last carries 4 bits, so its low 2 bits are spare.
    const respelled = token.slice(0, -1) + alphabet[alphabet.indexOf(token.at(-1)!) ^ 1];
    assert.deepEqual(Buffer.from(respelled.split(".")[2], "base64url"), Buffer.from(token.split(".")[2], "base64url"), "the same bytes");
    assert.equal(devices.verify(respelled, owner, now), undefined);
  });
});
