import assert from "node:assert/strict";
import { Code, createClient, createRouterTransport } from "@connectrpc/connect";
import { AuthorizationStatus, GameOAuthService, type AuthorizationSession } from "../../gen/outpost/gameoauth/v1/game_oauth_service_pb.js";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { ActivityService } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import { createHash, randomBytes } from "node:crypto";
import { noSignInMessage } from "../../core/game-oauth/login-verifier.ts";
import { createLoginCodeHasher, loginCodeAlphabet, loginCodeKeyPurpose } from "../../core/game-oauth/login-codes.ts";
import { derivedSecret, keyEncryptionKey } from "../../core/keys/key-encryption.ts";
import { startTestCore, testKeyEncryptionKey, type TestCore } from "../support/core.ts";
import { onPostgresServer } from "../support/database.ts";
import { oauthOutcome, rejectsWith } from "../support/errors.ts";
import { hashSecret } from "../../contract/secrets.ts";
import { binding, codeOf, command, config, createWorld, pkce, playAndConfirm, player, redirectUri, type World } from "./fixture.ts";

describe("Game OAuth: authorization sessions and the in-game proof", function () {
  this.timeout(60_000);
  let w: World;
  let client: { clientId: string; clientSecret: string };

  before(async () => {
    w = await createWorld();
    client = await w.createClient();
  });
  after(async () => {
    await w?.close();
  });

  it("is for the edge alone: never among the routes served on a public path", async () => {
    const publicOnly = createClient(GameOAuthService, createRouterTransport(w.t.core.publicRoutes, { router: { interceptors: w.t.core.interceptors } }));
    await rejectsWith(publicOnly.getUserInfo({ accessToken: "ogt_x" }), Code.Unimplemented);
    assert.equal(await oauthOutcome(w.oauth().getUserInfo({ accessToken: "ogt_x" })), "invalid_token");
  });

  describe("StartAuthorization", () => {
    const startRaw = (req: Record<string, string>) =>
      w.oauth().startAuthorization({ responseType: "code", clientId: client.clientId, redirectUri, state: "s", browserBindingHash: binding(), ...req });

    it("answers an error page, never a redirect, for an unknown or disabled client or an unsaved redirect URI", async () => {
      assert.equal((await startRaw({ clientId: "ogc_nope" })).outcome.case, "pageError");
      assert.equal((await startRaw({ clientId: "" })).outcome.case, "pageError");
      assert.equal((await startRaw({ redirectUri: "https://app.example.com/other" })).outcome.case, "pageError");
      assert.equal((await startRaw({ redirectUri: "https://evil.example.com/callback" })).outcome.case, "pageError");
      assert.equal((await startRaw({ redirectUri: "" })).outcome.case, "pageError");
      // A bad response_type with an unsaved redirect URI still never redirects.
      assert.equal((await startRaw({ responseType: "token", redirectUri: "https://evil.example.com/" })).outcome.case, "pageError");
      const disabled = await w.createClient({ name: "Disabled" });
      await w.t.client(OrganizationsService, { session: w.session }).updateGameOAuthClient({ clientId: disabled.clientId, disabled: true });
      assert.equal((await startRaw({ clientId: disabled.clientId })).outcome.case, "pageError");
    });

    it("matches the redirect URI after normalization, and keeps it as sent", async () => {
      const res = await startRaw({ redirectUri: "HTTPS://App.Example.com:443/callback" });
      assert.equal(res.outcome.case, "session");
    });

    it("answers an OAuth error for every other problem: confirm_redirect_error while the organization is unverified, redirect_error once verified", async () => {
      const cases: Array<[Record<string, string>, string]> = [
        [{ responseType: "token" }, "unsupported_response_type"],
        [{ responseType: "" }, "unsupported_response_type"],
        [{ state: "" }, "invalid_request"],
        [{ scope: "openid email" }, "invalid_scope"],
        [{ scope: "admin" }, "invalid_scope"],
        [{ codeChallengeMethod: "S256" }, "invalid_request"],
        [{ codeChallenge: pkce().challenge, codeChallengeMethod: "S512" }, "invalid_request"],
        [{ codeChallenge: "short", codeChallengeMethod: "S256" }, "invalid_request"],
        [{ codeChallenge: "short" }, "invalid_request"],
        [{ codeChallenge: `${pkce().challenge}!`, codeChallengeMethod: "S256" }, "invalid_request"],
      ];
      const expect = async (outcome: string) => {
        for (const [req, error] of cases) {
          const res = await startRaw(req);
          assert.equal(res.outcome.case, outcome, JSON.stringify(req));
          assert.equal((res.outcome.value as { error: string }).error, error, JSON.stringify(req));
        }
      };
      await expect("confirmRedirectError");
      await w.setVerified("acme", true);
      try {
        await expect("redirectError");
        // The page errors stay page errors.
        assert.equal((await startRaw({ responseType: "token", redirectUri: "https://evil.example.com/" })).outcome.case, "pageError");
      } finally {
        await w.setVerified("acme", false);
      }
      await expect("confirmRedirectError");
    });

    it("takes the scopes openid, profile, both in any order, or none, and PKCE S256, plain or absent", async () => {
      for (const scope of ["", "openid", "profile", "openid profile", "profile openid"]) {
        assert.equal((await startRaw({ scope })).outcome.case, "session", scope);
      }
      const plain = pkce("plain");
      assert.equal((await startRaw({ codeChallenge: plain.challenge })).outcome.case, "session", "no method means plain");
      assert.equal((await startRaw({ codeChallenge: plain.challenge, codeChallengeMethod: "plain" })).outcome.case, "session");
      assert.equal((await startRaw({ codeChallenge: pkce().challenge, codeChallengeMethod: "S256" })).outcome.case, "session");
    });

    it("opens a 10-minute session with a one-time code of the unambiguous alphabet, shown XXXX-XXXX", async () => {
      const { session } = await w.start({ clientId: client.clientId });
      assert.match(session.loginCode, new RegExp(`^[${loginCodeAlphabet}]{4}-[${loginCodeAlphabet}]{4}$`));
      assert.doesNotMatch(session.loginCode, /[01OIL]/);
      assert.equal(session.command, `/outpost login ${session.loginCode}`);
      assert.equal(session.clientName, "Demo App");
      assert.equal(session.status, AuthorizationStatus.PENDING);
      assert.equal(session.anyServer, true);
      const ttl = Number(session.expiresAt!.seconds) * 1000 - w.t.clock.now().getTime();
      assert.ok(ttl > 595_000 && ttl <= 600_000, `ttl ${ttl}`);
      const codes = new Set<string>();
      for (let i = 0; i < 40; i++) codes.add((await w.start({ clientId: client.clientId })).session.loginCode);
      assert.equal(codes.size, 40, "pending sessions never share a code");
      const [row] = await w.t.orm.em
        .fork()
        .getConnection()
        .execute(`select login_code_hash, login_code_sealed from hosted_authorizations where id = ?`, [session.sessionId]);
      assert.equal(row.login_code_hash.length, 64);
      assert.ok(!row.login_code_sealed.includes(session.loginCode.replace("-", "")), "the code is not stored in clear");
    });

    it("stores the login code keyed by the KEK: neither its SHA-256 nor what another KEK would store", async () => {
      const { session } = await w.start({ clientId: client.clientId });
      const code = session.loginCode.replace("-", "");
      const [row] = await w.t.orm.em.fork().getConnection().execute(`select login_code_hash from hosted_authorizations where id = ?`, [session.sessionId]);
      assert.notEqual(row.login_code_hash, createHash("sha256").update(code).digest("hex"), "not a plain SHA-256 a dump could brute-force");
      const under = (kek: Buffer) => createLoginCodeHasher(() => derivedSecret(keyEncryptionKey(kek), loginCodeKeyPurpose)).hash(code);
      assert.equal(row.login_code_hash, under(testKeyEncryptionKey));
      assert.notEqual(row.login_code_hash, under(randomBytes(32)));
    });

    it("lists the selected servers with their presence", async () => {
      const online = await w.createServer("Lobby");
      const offline = await w.createServer("Creative", { connect: false });
      const selected = await w.createClient({ name: "Selected", policy: { servers: [online.id, offline.id] } });
      const { session } = await w.start({ clientId: selected.clientId });
      assert.equal(session.anyServer, false);
      assert.deepEqual(
        session.servers.map((s) => [s.name, s.online]),
        [
          ["Creative", false],
          ["Lobby", true],
        ],
      );
    });
  });

  describe("Get and Watch", () => {
    it("show the session only to the browser it is bound to", async () => {
      const { session, binding: browser } = await w.start({ clientId: client.clientId });
      const got = await w.oauth().getAuthorization({ sessionId: session.sessionId, browserBindingHash: browser });
      assert.equal(got.session!.loginCode, session.loginCode);
      await rejectsWith(w.oauth().getAuthorization({ sessionId: session.sessionId, browserBindingHash: binding() }), Code.NotFound, "not_found");
      const watch = w.oauth().watchAuthorization({ sessionId: session.sessionId, browserBindingHash: binding() });
      await rejectsWith(
        (async () => {
          for await (const m of watch) void m;
        })(),
        Code.NotFound,
        "not_found",
      );
    });

    it("the session expires after 10 minutes", async () => {
      const { session, binding: browser } = await w.start({ clientId: client.clientId });
      w.t.clock.advance(600_001);
      try {
        const got = await w.oauth().getAuthorization({ sessionId: session.sessionId, browserBindingHash: browser });
        assert.equal(got.session!.status, AuthorizationStatus.EXPIRED);
        const late = await w.createServer("Late", { connect: false });
        const verdict = await w.t.deps.loginVerifier.verify({
          server: { id: late.id, organizationId: w.organizationId, name: "Late", game: "minecraft" },
          player: player(),
          code: session.loginCode.replace("-", ""),
          agentKeyHash: hashSecret(late.key),
        });
        assert.match(verdict.message, /No sign-in is waiting/);
      } finally {
        w.t.clock.advance(-600_001);
      }
    });
  });

  describe("the verifier", () => {
    const verify = (session: AuthorizationSession, server: { id: string; key: string; organizationId?: string; name?: string }) =>
      w.t.deps.loginVerifier.verify({
        server: { id: server.id, organizationId: server.organizationId ?? w.organizationId, name: server.name ?? "S", game: "minecraft" },
        player: player(),
        code: session.loginCode.replace("-", ""),
        agentKeyHash: hashSecret(server.key),
      });

    it("refuses a code no session waits for", async () => {
      const server = await w.createServer("Guess", { connect: false });
      const verdict = await w.t.deps.loginVerifier.verify({
        server: { id: server.id, organizationId: w.organizationId, name: "Guess", game: "minecraft" },
        player: player(),
        code: "ABCD2345",
        agentKeyHash: hashSecret(server.key),
      });
      assert.deepEqual(verdict, { accepted: false, message: noSignInMessage });
    });

    it("refuses a server of another organization", async () => {
      const { session } = await w.start({ clientId: client.clientId });
      const foreign = await w.createServer("Foreign", { organizationSlug: "other" });
      const [row] = await w.t.orm.em.fork().getConnection().execute(`select organization_id from servers where id = ?`, [foreign.id]);
      const verdict = await verify(session, { ...foreign, organizationId: row.organization_id });
      assert.deepEqual(verdict, { accepted: false, message: noSignInMessage }, "as if no sign-in waited for the code");
    });

    it("refuses a server the policy does not select, and a server whose agent is not connected", async () => {
      const allowed = await w.createServer("Allowed", { connect: false });
      const other = await w.createServer("Elsewhere");
      const selected = await w.createClient({ name: "Picky", policy: { servers: [allowed.id] } });
      const { session } = await w.start({ clientId: selected.clientId });
      const notAllowed = await other.agent!.playCommand(player(), command(session));
      assert.equal(notAllowed.accepted, false);
      assert.match(notAllowed.message, /This server is not allowed to sign you in to Picky/);
      const offline = await verify(session, allowed);
      assert.equal(offline.accepted, false);
      assert.match(offline.message, /not connected|connection to Outpost is down/);
    });

    it("refuses a stream whose agent key was replaced since it connected (as on another instance)", async () => {
      const server = await w.createServer("Rekeyed");
      const { session, binding: browser } = await w.start({ clientId: client.clientId });
      // Regenerated elsewhere: this instance still holds the stream opened with the old key.
      await w.t.orm.em
        .fork()
        .getConnection()
        .execute(`update servers set agent_key_hash = ? where id = ?`, [hashSecret("opa_replaced"), server.id], "run");
      const reply = await server.agent!.playCommand(player(), command(session));
      assert.equal(reply.accepted, false);
      assert.match(reply.message, /agent key was replaced/);
      const { session: still } = await w.oauth().getAuthorization({ sessionId: session.sessionId, browserBindingHash: browser });
      assert.equal(still?.status, AuthorizationStatus.PENDING, "the sign-in waits for an allowed server");
    });

    it("completes the sign-in: Watch yields the redirect URL with code, state and iss; the activity log has it", async () => {
      const server = await w.createServer("Survival");
      const { session, binding: browser } = await w.start({ clientId: client.clientId, state: "xyz 1", redirectUri: "https://app.example.com/cb?tenant=1" });
      const stream = w.oauth().watchAuthorization({ sessionId: session.sessionId, browserBindingHash: browser })[Symbol.asyncIterator]();
      const first = await stream.next();
      assert.equal(first.value.session.status, AuthorizationStatus.PENDING);
      const alex = player("Alex");
      const claimed = await server.agent!.playCommand(alex, command(session).toLowerCase());
      assert.equal(claimed.accepted, false);
      assert.equal(claimed.message, "Sign in to Demo App at app.example.com? Type /outpost confirm within 60 s — only if you started this yourself.");
      assert.deepEqual(claimed.confirmation, { appName: "Demo App", redirectHost: "app.example.com", expiresInSeconds: 60 });
      const confirming = (await stream.next()).value.session as AuthorizationSession;
      assert.equal(confirming.status, AuthorizationStatus.PENDING);
      assert.deepEqual([confirming.claim?.playerName, confirming.claim?.serverName], ["Alex", "Survival"]);
      const started = Date.now();
      const reply = await server.agent!.confirm(alex);
      assert.deepEqual(reply, { accepted: true, message: "Signed in to Demo App." });
      const second = await stream.next();
      assert.ok(Date.now() - started < 1_500, "pushed, not found by the poll");
      const done = second.value.session as AuthorizationSession;
      assert.equal(done.status, AuthorizationStatus.COMPLETED);
      const url = new URL(done.redirectUrl);
      assert.equal(`${url.origin}${url.pathname}`, "https://app.example.com/cb");
      assert.equal(url.searchParams.get("tenant"), "1", "the registered query is kept");
      assert.equal(url.searchParams.get("state"), "xyz 1");
      assert.equal(url.searchParams.get("iss"), "http://game.test");
      assert.match(codeOf(done), /^ogx_/);
      assert.equal((await stream.next()).done, true, "the stream ends with the completion");
      // The database holds the code only hashed: the session's copy opens for the bound browser alone.
      const [stored] = await w.t.orm.em.fork().getConnection().execute(`select * from hosted_authorizations where id = ?`, [session.sessionId]);
      assert.ok(!JSON.stringify(stored).includes(codeOf(done)), "the authorization code is not stored in clear");
      assert.equal((await w.oauth().getAuthorization({ sessionId: session.sessionId, browserBindingHash: browser })).session?.redirectUrl, done.redirectUrl);
      await assert.rejects(w.oauth().getAuthorization({ sessionId: session.sessionId, browserBindingHash: binding() }));
      const again = await server.agent!.playCommand(player(), command(session));
      assert.match(again.message, /No sign-in is waiting/, "a code completes one sign-in");
      const { events } = await w.t.client(ActivityService, { session: w.session }).listOrganizationActivity({ organizationSlug: "acme" });
      const signIn = events.find((e) => e.action === "game_oauth.sign_in");
      assert.ok(signIn, "game_oauth.sign_in is recorded");
      assert.equal(signIn.details.clientId, client.clientId);
      assert.equal(signIn.details.serverId, server.id);
    });
  });

  onPostgresServer(() => {
    describe("across instances", () => {
      let other: TestCore | undefined;
      after(async () => {
        await other?.close();
      });

      it("an instance with another KEY_ENCRYPTION_KEY finds no login code of this one", async () => {
        const foreign = await startTestCore(config, { database: w.t.database, keyEncryptionKey: randomBytes(32) });
        try {
          const server = await w.createServer("Rekeyed instance", { connect: false });
          const { session } = await w.start({ clientId: client.clientId });
          const verdict = await foreign.deps.loginVerifier.verify({
            server: { id: server.id, organizationId: w.organizationId, name: "Rekeyed instance", game: "minecraft" },
            player: player(),
            code: session.loginCode.replace("-", ""),
            agentKeyHash: hashSecret(server.key),
          });
          assert.match(verdict.message, /No sign-in is waiting/);
        } finally {
          await foreign.close();
        }
      });

      it("a Watch on one instance sees a completion made on another", async () => {
        other = await startTestCore(config, { database: w.t.database });
        const server = await w.createServer("Shared");
        const { session, binding: browser } = await w.start({ clientId: client.clientId });
        const stream = w.oauth(other).watchAuthorization({ sessionId: session.sessionId, browserBindingHash: browser })[Symbol.asyncIterator]();
        assert.equal((await stream.next()).value.session.status, AuthorizationStatus.PENDING);
        const started = Date.now();
        assert.equal((await playAndConfirm(server.agent!, player(), session)).accepted, true);
        const done = (await stream.next()).value.session as AuthorizationSession;
        assert.equal(done.status, AuthorizationStatus.COMPLETED);
        assert.ok(Date.now() - started < 1_500, "by NOTIFY, not by the poll");
        assert.ok(codeOf(done));
      });
    });
  });
});
