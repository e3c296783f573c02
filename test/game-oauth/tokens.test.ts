import { Code } from "@connectrpc/connect";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { createLocalJWKSet, jwtVerify } from "jose";
import { ActivityKind, ActivityService, ActivitySeverity } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import type { ExchangeCodeRequest } from "../../gen/outpost/gameoauth/v1/game_oauth_service_pb.js";
import type { TokenSet } from "../../gen/outpost/oauth/v1/oauth_pb.js";
import type { Agent } from "../../agent/client.ts";
import { deleteExpiredFlowRows } from "../../core/oauth/cleanup.ts";
import { oauthOutcome, rejectsWith } from "../support/errors.ts";
import { codeOf, createWorld, pkce, playAndConfirm, player, redirectUri, type World } from "./fixture.ts";

type Request = Omit<Partial<ExchangeCodeRequest>, "$typeName" | "$unknown">;

describe("Game OAuth: token exchange and userinfo", function () {
  this.timeout(60_000);
  let w: World;
  let client: { clientId: string; clientSecret: string };
  let agent: Agent;
  let serverId: string;

  before(async () => {
    w = await createWorld();
    client = await w.createClient();
    const server = await w.createServer("Main");
    agent = server.agent!;
    serverId = server.id;
  });
  after(async () => {
    await w?.close();
  });

  /** A whole sign-in up to the code in the redirect URL. */
  async function signIn(options: { challenge?: { challenge: string; method: string }; nonce?: string; who?: { name: string; uuid: string }; clientId?: string } = {}) {
    const { session, binding } = await w.start({
      clientId: options.clientId ?? client.clientId,
      nonce: options.nonce ?? "",
      codeChallenge: options.challenge?.challenge ?? "",
      codeChallengeMethod: options.challenge?.method ?? "",
    });
    const reply = await playAndConfirm(agent, options.who ?? player(), session);
    assert.equal(reply.accepted, true, reply.message);
    const { session: done } = await w.oauth().getAuthorization({ sessionId: session.sessionId, browserBindingHash: binding });
    return codeOf(done!);
  }

  const exchange = (req: Request) =>
    w.oauth().exchangeCode({ clientId: client.clientId, clientSecret: client.clientSecret, grantType: "authorization_code", redirectUri, ...req });
  /** "ok", or the OAuth error the exchange was refused with. */
  const errorOf = oauthOutcome;
  const tokensOf = (res: Awaited<ReturnType<typeof exchange>>): TokenSet => {
    if (!res.tokens) assert.fail("expected tokens");
    return res.tokens;
  };
  const userInfo = (accessToken: string) => w.oauth().getUserInfo({ accessToken });

  it("exchanges a code for an access token and an RS256 ID token with the game claims", async () => {
    const who = player("Steve");
    const p = pkce();
    const code = await signIn({ challenge: p, nonce: "n-0S6", who });
    const tokens = tokensOf(await exchange({ code, codeVerifier: p.verifier }));
    assert.equal(tokens.tokenType, "Bearer");
    assert.equal(tokens.expiresIn, 900);
    assert.equal(tokens.scope, "openid profile");
    assert.match(tokens.accessToken, /^ogt_/);
    const jwks = createLocalJWKSet(await w.t.signingKeys.jwks("game"));
    const { payload, protectedHeader } = await jwtVerify(tokens.idToken, jwks, { issuer: "http://game.test", audience: client.clientId });
    assert.equal(protectedHeader.alg, "RS256");
    assert.equal(payload.nonce, "n-0S6");
    assert.equal(payload.at_hash, createHash("sha256").update(tokens.accessToken).digest().subarray(0, 16).toString("base64url"));
    assert.equal(payload.exp! - payload.iat!, 600);
    assert.ok(typeof payload.auth_time === "number" && payload.auth_time <= payload.iat!);
    assert.match(payload.sub!, /^gp_/);
    assert.equal(payload.preferred_username, "Steve");
    assert.equal(payload.game_account_name, "Steve");
    assert.equal(payload.game, "minecraft");
    assert.equal(payload.game_account_id, who.uuid);
    assert.equal(payload.organization_id, w.organizationId);
    assert.equal(payload.verified_by_server_id, serverId);

    const info = await userInfo(tokens.accessToken);
    assert.deepEqual(
      { ...info.claims, $typeName: undefined },
      {
        $typeName: undefined,
        sub: payload.sub,
        preferredUsername: "Steve",
        game: "minecraft",
        gameAccountName: "Steve",
        gameAccountId: who.uuid,
        organizationId: w.organizationId,
        verifiedByServerId: serverId,
      },
    );
  });

  it("leaves nonce out when none was sent, and exchanges without PKCE when none was used", async () => {
    const tokens = tokensOf(await exchange({ code: await signIn() }));
    const { payload } = await jwtVerify(tokens.idToken, createLocalJWKSet(await w.t.signingKeys.jwks("game")));
    assert.equal(payload.nonce, undefined);
  });

  /** The access tokens stored for a code: the exchange stores one only when every check passes. */
  async function tokensStoredFor(code: string): Promise<number> {
    const rows = await w.t.orm.em
      .fork()
      .getConnection()
      .execute<{ n: number }[]>(`select count(*)::int as n from access_tokens t join authorization_codes c on c.id = t.authorization_code_id where c.code_hash = ?`, [
        createHash("sha256").update(code).digest("hex"),
      ]);
    return rows[0].n;
  }

  it("accepts plain PKCE", async () => {
    const p = pkce("plain");
    tokensOf(await exchange({ code: await signIn({ challenge: p }), codeVerifier: p.verifier }));
  });

  it("refuses a code used again, and revokes the tokens of its first use", async () => {
    const code = await signIn();
    const first = tokensOf(await exchange({ code }));
    assert.equal(await oauthOutcome(userInfo(first.accessToken)), "ok");
    assert.equal(await errorOf(exchange({ code })), "invalid_grant");
    assert.equal(await oauthOutcome(userInfo(first.accessToken)), "invalid_token");
    assert.equal(await errorOf(exchange({ code })), "invalid_grant");
    // The organization's activity says so, once per code however often it comes back.
    const reused = (await reuseEvents()).filter((e) => e.details.clientId === client.clientId);
    assert.equal(reused.length, 1);
    assert.deepEqual(
      [reused[0].targetType, reused[0].targetId, reused[0].serverId, reused[0].details.presentedBy, reused[0].details.clientName],
      ["game_oauth_client", client.clientId, serverId, client.clientId, "Demo App"],
    );
    assert.deepEqual([reused[0].kind, reused[0].severity], [ActivityKind.SECURITY, ActivitySeverity.ERROR]);
  });

  /** The organization's game_oauth.code_reused events, as its owner lists them. */
  async function reuseEvents() {
    const { events } = await w.t.client(ActivityService, { session: w.session }).listOrganizationActivity({ organizationSlug: "acme" });
    return events.filter((e) => e.action === "game_oauth.code_reused");
  }

  it("refuses a code older than 90 seconds", async () => {
    const code = await signIn();
    w.t.clock.advance(91_000);
    try {
      assert.equal(await errorOf(exchange({ code })), "invalid_grant");
    } finally {
      w.t.clock.advance(-91_000);
    }
    assert.equal(await errorOf(exchange({ code })), "invalid_grant", "and it stays dead");
  });

  it("refuses a wrong redirect URI, a wrong client, a wrong or missing PKCE verifier; each kills the code", async () => {
    const other = await w.createClient({ name: "Other App" });
    const p = pkce();
    const attempts: Array<[string, (code: string) => Request]> = [
      ["redirect URI with a trailing difference", (code) => ({ code, codeVerifier: p.verifier, redirectUri: `${redirectUri}/` })],
      ["redirect URI differing in case", (code) => ({ code, codeVerifier: p.verifier, redirectUri: "https://APP.example.com/callback" })],
      ["another client", (code) => ({ code, codeVerifier: p.verifier, clientId: other.clientId, clientSecret: other.clientSecret })],
      ["a wrong verifier", (code) => ({ code, codeVerifier: pkce().verifier })],
      ["no verifier", (code) => ({ code })],
    ];
    for (const [what, request] of attempts) {
      const code = await signIn({ challenge: p });
      assert.equal(await errorOf(exchange(request(code))), "invalid_grant", what);
      assert.equal(await errorOf(exchange({ code, codeVerifier: p.verifier })), "invalid_grant", `${what}: the code is dead afterwards`);
      assert.equal(await tokensStoredFor(code), 0, `${what}: no access token was stored`);
    }
    const code = await signIn();
    assert.equal(await errorOf(exchange({ code, codeVerifier: pkce().verifier })), "invalid_grant", "a verifier without a challenge");
    assert.equal(await tokensStoredFor(code), 0, "a verifier without a challenge: no access token was stored");
    const good = await signIn({ challenge: p });
    tokensOf(await exchange({ code: good, codeVerifier: p.verifier }));
    assert.equal(await tokensStoredFor(good), 1, "a good exchange stores its one token");
  });

  it("authenticates the client: unknown, wrong or rotated secret, disabled → invalid_client; then the grant", async () => {
    const own = await w.createClient({ name: "Rotating" });
    const code = await signIn({ clientId: own.clientId });
    assert.equal(await errorOf(exchange({ code, clientId: "ogc_unknown", clientSecret: own.clientSecret })), "invalid_client");
    assert.equal(await errorOf(exchange({ code, clientId: own.clientId, clientSecret: client.clientSecret })), "invalid_client");
    assert.equal(await errorOf(exchange({ code, clientId: own.clientId, clientSecret: "" })), "invalid_client");
    const organizations = w.t.client(OrganizationsService, { session: w.session });
    const rotated = await organizations.rotateGameOAuthClientSecret({ clientId: own.clientId });
    assert.equal(await errorOf(exchange({ code, clientId: own.clientId, clientSecret: own.clientSecret })), "invalid_client", "the old secret");
    assert.equal(await errorOf(exchange({ code, clientId: own.clientId, clientSecret: rotated.clientSecret, grantType: "password" })), "unsupported_grant_type");
    assert.equal(await errorOf(exchange({ code: "", clientId: own.clientId, clientSecret: rotated.clientSecret })), "invalid_request");
    assert.equal(await errorOf(exchange({ code, redirectUri: "", clientId: own.clientId, clientSecret: rotated.clientSecret })), "invalid_request");
    const tokens = tokensOf(await exchange({ code, clientId: own.clientId, clientSecret: rotated.clientSecret }));

    // Rotation and disabling affect new exchanges only: the issued token keeps working.
    await organizations.rotateGameOAuthClientSecret({ clientId: own.clientId });
    await organizations.updateGameOAuthClient({ clientId: own.clientId, disabled: true });
    assert.equal(await oauthOutcome(userInfo(tokens.accessToken)), "ok");
    assert.equal(await errorOf(exchange({ code: "whatever", clientId: own.clientId, clientSecret: rotated.clientSecret })), "invalid_client");
  });

  it("of 64 concurrent exchanges of one code exactly one succeeds", async () => {
    const code = await signIn();
    const before = (await reuseEvents()).length;
    const results = await Promise.all(Array.from({ length: 64 }, () => errorOf(exchange({ code }))));
    assert.equal(results.filter((r) => r === "ok").length, 1);
    assert.ok(results.every((r) => r === "ok" || r === "invalid_grant"));
    assert.equal((await reuseEvents()).length, before + 1, "63 refused exchanges, one event");
    assert.equal(await errorOf(exchange({ code })), "invalid_grant");
    assert.equal((await reuseEvents()).length, before + 1, "and none for a later one");
  });

  it("userinfo refuses an unknown or expired token", async () => {
    assert.equal(await oauthOutcome(userInfo("ogt_nothing")), "invalid_token");
    const tokens = tokensOf(await exchange({ code: await signIn() }));
    w.t.clock.advance(900_000);
    try {
      assert.equal(await oauthOutcome(userInfo(tokens.accessToken)), "invalid_token");
    } finally {
      w.t.clock.advance(-900_000);
    }
  });

  it("keeps sub stable across sign-ins and name changes; claims follow the current name", async () => {
    const uuid = player().uuid;
    const first = tokensOf(await exchange({ code: await signIn({ who: { name: "Old", uuid } }) }));
    const second = tokensOf(await exchange({ code: await signIn({ who: { name: "New", uuid } }) }));
    const jwks = createLocalJWKSet(await w.t.signingKeys.jwks("game"));
    const a = (await jwtVerify(first.idToken, jwks)).payload;
    const b = (await jwtVerify(second.idToken, jwks)).payload;
    assert.equal(a.sub, b.sub);
    assert.equal(a.preferred_username, "Old");
    assert.equal(b.preferred_username, "New");
    const info = await userInfo(first.accessToken);
    assert.equal(info.claims?.preferredUsername, "New", "the current name");
    const someoneElse = tokensOf(await exchange({ code: await signIn({ who: player("Old") }) }));
    assert.notEqual((await jwtVerify(someoneElse.idToken, jwks)).payload.sub, a.sub);
  });

  it("the cleanup deletes sessions, codes and tokens an hour after they ended, and nothing live", async () => {
    const old = tokensOf(await exchange({ code: await signIn() }));
    const db = () => w.t.orm.em.fork().getConnection();
    const count = async (table: string) => Number((await db().execute(`select count(*)::int as n from ${table}`))[0].n);
    // Everything so far ended two hours ago.
    for (const table of ["hosted_authorizations", "authorization_codes", "access_tokens"]) {
      await db().execute(`update ${table} set expires_at = expires_at - interval '2 hours'`);
    }
    const live = tokensOf(await exchange({ code: await signIn() }));
    await deleteExpiredFlowRows(w.t.deps, w.t.clock.now());
    assert.equal(await count("hosted_authorizations"), 1);
    assert.equal(await count("authorization_codes"), 1);
    assert.equal(await count("access_tokens"), 1);
    assert.equal(await oauthOutcome(userInfo(live.accessToken)), "ok");
    assert.equal(await oauthOutcome(userInfo(old.accessToken)), "invalid_token");
    assert.ok((await count("game_accounts")) > 0, "game accounts (and their sub) stay");
  });

  it("counts a client's sign-ins per UTC day (started, signed in, exchanged) and keeps the counts when the cleanup deletes the sessions", async () => {
    const app = await w.createClient({ name: "Counted" });
    const db = () => w.t.orm.em.fork().getConnection();
    const code = await signIn({ clientId: app.clientId });
    const exchanged = await w.oauth().exchangeCode({ clientId: app.clientId, clientSecret: app.clientSecret, grantType: "authorization_code", redirectUri, code });
    tokensOf(exchanged);
    await signIn({ clientId: app.clientId });
    await w.start({ clientId: app.clientId });
    const organizations = w.t.client(OrganizationsService, { session: w.session });
    const stats = async () =>
      (await organizations.getGameOAuthClientStats({ clientId: app.clientId, days: 3 })).days.map((d) => [d.day, d.started, d.signedIn, d.exchanged]);
    const before = await stats();
    const today = Date.parse(`${before[2][0]}T00:00:00Z`);
    assert.deepEqual(
      before.map((d) => d[0]),
      [2, 1, 0].map((n) => new Date(today - n * 86_400_000).toISOString().slice(0, 10)),
      "every day of the range, oldest first",
    );
    const sum = (days: typeof before) => [1, 2, 3].map((i) => days.reduce((n, d) => n + (d[i] as number), 0));
    assert.deepEqual(sum(before), [3, 2, 1]);
    assert.equal(await organizations.getGameOAuthClientStats({ clientId: app.clientId }).then((r) => r.days.length), 30);

    await db().execute(
      `update hosted_authorizations h set expires_at = expires_at - interval '2 hours' from game_oauth_clients c where c.id = h.game_oauth_client_id and c.client_id = ?`,
      [app.clientId],
    );
    await Promise.all([deleteExpiredFlowRows(w.t.deps, w.t.clock.now()), deleteExpiredFlowRows(w.t.deps, w.t.clock.now())]);
    const left = await db().execute(
      `select count(*)::int as n from hosted_authorizations h join game_oauth_clients c on c.id = h.game_oauth_client_id where c.client_id = ?`,
      [app.clientId],
    );
    assert.equal(left[0].n, 0, "the sessions are gone");
    assert.deepEqual(await stats(), before, "their counts are kept, once each although two instances cleaned up at once");

    const stranger = await w.t.signUp("stranger@example.com");
    await rejectsWith(w.t.client(OrganizationsService, { session: stranger.token }).getGameOAuthClientStats({ clientId: app.clientId }), Code.NotFound);
  });
});
