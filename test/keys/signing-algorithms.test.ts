import assert from "node:assert/strict";
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from "jose";
import type { Jwks, SigningAlg } from "../../core/keys/signing-keys.ts";
import { startTestCore, testConfig, type TestCore } from "../support/core.ts";

const privateMembers = ["d", "p", "q", "dp", "dq", "qi"];

/** Verifies `token` against `jwks` as a relying party would; resolves to the kid it was signed with. */
async function verify(token: string, jwks: Jwks, alg: SigningAlg = "RS256"): Promise<string> {
  const { protectedHeader } = await jwtVerify(token, createLocalJWKSet(jwks as JSONWebKeySet), { algorithms: [alg] });
  return protectedHeader.kid!;
}

/** The kids of the JWKS's keys of `alg` (RS256 unless told), in its order. */
const kids = (jwks: Jwks, alg: SigningAlg = "RS256") => jwks.keys.filter((key) => key.alg === alg).map((key) => key.kid);

/**
 * The issuers' key sets per ID token algorithm (RS256, ES256, EdDSA): what the JWKS publishes of
 * each kind, signatures jose verifies, and the sets an issuer from before them gets on first use.
 * Rotation, purge and the keys at rest, for every algorithm, are in signing-keys.test.ts.
 */
describe("signing keys of each algorithm", () => {
  let t: TestCore;
  const sql = <T = { kid: string; stage: string }>(query: string, params: unknown[] = []) => t.orm.em.fork().getConnection().execute<T[]>(query, params);
  const stored = async (issuer: string, alg: SigningAlg) =>
    Object.fromEntries((await sql(`select stage, kid from signing_keys where issuer = ? and alg = ?`, [issuer, alg])).map((r) => [r.stage, r.kid]));

  before(async () => {
    t = await startTestCore();
  });
  after(() => t?.close());

  it("publishes next and current with kid, use and alg, and no private member", async () => {
    const jwks = await t.signingKeys.jwks("game");
    assert.equal(jwks.keys.length, 6);
    const [current, next] = jwks.keys;
    const rows = await stored("game", "RS256");
    assert.deepEqual([current.kid, next.kid], [rows.current, rows.next], "RS256 first, current before next");
    assert.deepEqual(
      jwks.keys.map((key) => key.alg),
      ["RS256", "RS256", "ES256", "ES256", "EdDSA", "EdDSA"],
    );
    for (const key of jwks.keys) {
      assert.equal(key.use, "sig");
      for (const member of privateMembers) assert.ok(!(member in key), `no "${member}"`);
      if (key.kty === "RSA") {
        assert.deepEqual(Object.keys(key).sort(), ["alg", "e", "kid", "kty", "n", "use"]);
        assert.equal(key.alg, "RS256");
        assert.equal(key.e, "AQAB");
        assert.equal(Buffer.from(key.n, "base64url").length, 256, "RSA 2048");
      } else if (key.kty === "EC") {
        assert.deepEqual(Object.keys(key).sort(), ["alg", "crv", "kid", "kty", "use", "x", "y"]);
        assert.deepEqual([key.alg, key.crv], ["ES256", "P-256"]);
        assert.equal(Buffer.from(key.x, "base64url").length, 32);
      } else {
        assert.deepEqual(Object.keys(key).sort(), ["alg", "crv", "kid", "kty", "use", "x"]);
        assert.deepEqual([key.kty, key.alg, key.crv], ["OKP", "EdDSA", "Ed25519"]);
        assert.equal(Buffer.from(key.x, "base64url").length, 32);
      }
    }
    assert.ok(!/"(d|p|q|dp|dq|qi)"/.test(JSON.stringify(jwks)));
  });

  for (const alg of ["ES256", "EdDSA"] as const) {
    it(`signs ${alg} with that algorithm's current key, which verifies against the published JWKS`, async () => {
      const jwks = await t.signingKeys.jwks("game");
      const [current] = kids(jwks, alg);
      const token = await t.signingKeys.sign("game", { sub: "player", aud: "app" }, { typ: "JWT" }, alg);
      assert.deepEqual(decodeProtectedHeader(token), { typ: "JWT", alg, kid: current });
      assert.equal(await verify(token, jwks, alg), current);
      // The signature is the raw form JWS uses: 64 bytes for both (ES256's r‖s, not DER).
      assert.equal(Buffer.from(token.split(".")[2], "base64url").length, 64);
      // Another algorithm's key does not stand in: a token whose header names RS256 over these bytes fails.
      const [, body, signature] = token.split(".");
      const relabelled = `${Buffer.from(JSON.stringify({ alg: "RS256", kid: current })).toString("base64url")}.${body}.${signature}`;
      await assert.rejects(verify(relabelled, jwks));
    });
  }

  it("gives an issuer made before ES256 and EdDSA their keys on first use, beside its RS256 ones", async () => {
    await t.signingKeys.jwks("account"); // the issuer's keys, RS256 and the others
    const issuer = await startTestCore(testConfig, { database: t.database });
    try {
      const rsa = await stored("account", "RS256");
      await sql(`delete from signing_keys where issuer = 'account' and alg <> 'RS256'`);
      const jwks = await issuer.signingKeys.jwks("account");
      assert.deepEqual(kids(jwks), [rsa.current, rsa.next], "the RS256 keys are kept");
      assert.equal(kids(jwks, "ES256").length, 2);
      assert.equal(kids(jwks, "EdDSA").length, 2);
      assert.equal(await verify(await issuer.signingKeys.sign("account", {}, {}, "EdDSA"), jwks, "EdDSA"), kids(jwks, "EdDSA")[0]);
    } finally {
      await issuer.close();
      t.clock.advance(61_000); // this instance re-reads the account keys made meanwhile
    }
  });
});
