import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { ActivityService } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { AuthorizationStatus, type AuthorizationSession } from "../../gen/outpost/gameoauth/v1/game_oauth_service_pb.js";
import type { Agent } from "../../agent/client.ts";
import { sweepLapsedClaims } from "../../core/game-oauth/login-claims.ts";
import { command, createWorld, player, type World } from "./fixture.ts";

const noSignIn = "No sign-in is waiting for that code. Check it on the sign-in page, or start again from the app.";
const nothingToConfirm = "No sign-in is waiting for your confirmation on this server. Run /outpost login <CODE> first.";
const prompt = "Sign in to Demo App at app.example.com? Type /outpost confirm within 60 s — only if you started this yourself.";

/**
 * The in-game confirmation (RFC 8628 §5.4, remote phishing): a valid code only claims the sign-in
 * for the player and server that ran it; that player, on that server, must confirm within 60 s.
 */
describe("Game OAuth: the player confirms in game", function () {
  this.timeout(60_000);
  let w: World;
  let clientId: string;
  let lobby: Agent;
  let arena: Agent;

  before(async () => {
    w = await createWorld();
    clientId = (await w.createClient()).clientId;
    lobby = (await w.createServer("Lobby")).agent!;
    arena = (await w.createServer("Arena")).agent!;
  });
  after(async () => {
    await w?.close();
  });

  const read = async (session: AuthorizationSession, browser: string) =>
    (await w.oauth().getAuthorization({ sessionId: session.sessionId, browserBindingHash: browser })).session!;
  const sql = (query: string, params: unknown[]) => w.t.orm.em.fork().getConnection().execute(query, params);
  const activity = async (action: string) => {
    const { events } = await w.t.client(ActivityService, { session: w.session }).listOrganizationActivity({ organizationSlug: "acme" });
    return events.filter((e) => e.action === action);
  };

  it("a valid code signs no one in: it asks the player, and the page shows who is confirming where", async () => {
    const { session, binding } = await w.start({ clientId });
    const steve = player("Steve");
    const reply = await lobby.playCommand(steve, command(session));
    assert.deepEqual(reply, { accepted: false, message: prompt, confirmation: { appName: "Demo App", redirectHost: "app.example.com", expiresInSeconds: 60 } });
    const shown = await read(session, binding);
    assert.equal(shown.status, AuthorizationStatus.PENDING);
    assert.equal(shown.redirectHost, "app.example.com");
    assert.deepEqual([shown.claim?.playerName, shown.claim?.serverName], ["Steve", "Lobby"]);
    const until = Number(shown.claim!.expiresAt!.seconds) * 1000 - w.t.clock.now().getTime();
    assert.ok(until > 58_000 && until <= 60_000, `${until} ms to confirm`);
    const [codes] = await sql(`select count(*)::int as n from authorization_codes where hosted_authorization_id = ?`, [session.sessionId]);
    assert.equal(codes.n, 0, "no authorization code before the confirmation");
    const [claimed] = (await activity("game_oauth.sign_in_claimed")).filter((e) => e.details.playerUuid === steve.uuid);
    assert.ok(claimed, "game_oauth.sign_in_claimed is recorded");
    assert.equal(claimed.details.serverName, "Lobby");
  });

  it("only the claimant on the same server confirms; anyone else reads what a player with no claim reads", async () => {
    const { session, binding } = await w.start({ clientId });
    const steve = player("Steve");
    const alex = player("Alex");
    assert.equal((await lobby.playCommand(steve, command(session))).message, prompt);
    // Another player on the same server, the claimant on another server, a player with no claim at all.
    assert.deepEqual(await lobby.confirm(alex), { accepted: false, message: nothingToConfirm });
    assert.deepEqual(await arena.confirm(steve), { accepted: false, message: nothingToConfirm });
    assert.deepEqual(await arena.playCommand(player("Nobody"), "/outpost confirm"), { accepted: false, message: nothingToConfirm });
    assert.deepEqual(await lobby.cancel(alex), { accepted: false, message: nothingToConfirm }, "nor may they cancel it");
    // Nor may they take it over while the claim lasts: as if no sign-in waited for the code.
    assert.deepEqual(await arena.playCommand(alex, command(session)), { accepted: false, message: noSignIn });
    assert.deepEqual(await arena.playCommand(steve, command(session)), { accepted: false, message: noSignIn }, "the claimant elsewhere");
    assert.equal((await read(session, binding)).claim?.serverName, "Lobby");

    // Typed, as the player does without a plugin's button.
    assert.deepEqual(await lobby.playCommand(steve, "/outpost confirm"), { accepted: true, message: "Signed in to Demo App." });
    const done = await read(session, binding);
    assert.equal(done.status, AuthorizationStatus.COMPLETED);
    assert.equal(done.claim, undefined);
    // The same confirmation again at once (its answer lost with a connection, and asked again) is
    // told it went through; a claim still completes one sign-in, with one code.
    assert.deepEqual(await lobby.confirm(steve), { accepted: true, message: "Signed in to Demo App." });
    const signIns = (await activity("game_oauth.sign_in")).filter((e) => e.details.playerUuid === steve.uuid);
    assert.equal(signIns.length, 1, "one sign-in");
    assert.equal(signIns[0].details.confirmedInGame, "true");
    const [codes] = await sql(`select count(*)::int as n from authorization_codes where hosted_authorization_id = ?`, [session.sessionId]);
    assert.equal(codes.n, 1, "one authorization code");
    assert.deepEqual(await arena.confirm(steve), { accepted: false, message: nothingToConfirm }, "on another server, nothing was");
  });

  it("re-typing one's own claimed code changes nothing: no activity row, no page update, the same deadline", async () => {
    const { session, binding } = await w.start({ clientId });
    const steve = player("Steve");
    assert.equal((await lobby.playCommand(steve, command(session))).message, prompt);
    const deadline = (await read(session, binding)).claim!.expiresAt;
    let published = 0;
    const unsubscribe = w.t.events.subscribe(session.sessionId, () => published++);
    try {
      w.t.clock.advance(10_000);
      for (let i = 0; i < 3; i++) {
        const again = await lobby.playCommand(steve, command(session));
        assert.ok(again.confirmation && again.confirmation.expiresInSeconds <= 50, `asks with the time left: ${again.message}`);
        assert.ok(again.message.includes(`within ${again.confirmation.expiresInSeconds} s`), again.message);
      }
      // Events travel in order on one channel: once one published now arrives, any the re-typed codes published have.
      const marker = randomUUID();
      const arrived = new Promise<void>((resolve) => w.t.events.subscribe(marker, resolve));
      await w.t.events.publish(marker);
      await arrived;
      assert.equal(published, 0, "the page is told of no change");
      assert.deepEqual((await read(session, binding)).claim!.expiresAt, deadline);
      assert.equal((await activity("game_oauth.sign_in_claimed")).filter((e) => e.details.playerUuid === steve.uuid).length, 1);
      assert.equal((await lobby.confirm(steve)).accepted, true);
    } finally {
      unsubscribe();
      w.t.clock.advance(-10_000);
    }
  });

  it("a sign-in with less than 60 s left is claimed until it ends, and the prompt says how long that is", async () => {
    const { session, binding } = await w.start({ clientId });
    w.t.clock.advance(570_000);
    try {
      await sql(`update servers set last_seen_at = ?`, [w.t.clock.now()]);
      const late = player("Late");
      const reply = await lobby.playCommand(late, command(session));
      const seconds = reply.confirmation?.expiresInSeconds ?? 0;
      assert.ok(seconds > 0 && seconds <= 30, `${seconds} s to confirm`);
      assert.equal(reply.message, prompt.replace("within 60 s", `within ${seconds} s`));
      assert.deepEqual((await read(session, binding)).claim!.expiresAt, session.expiresAt, "the claim ends with the sign-in");
    } finally {
      w.t.clock.advance(-570_000);
    }
  });

  it("the game account and the sign-in event take the name the page showed, not one sent with the confirmation", async () => {
    const { session, binding } = await w.start({ clientId });
    const steve = player("Steve");
    await lobby.playCommand(steve, command(session));
    assert.equal((await read(session, binding)).claim?.playerName, "Steve");
    assert.equal((await lobby.confirm({ name: "Notch", uuid: steve.uuid })).accepted, true);
    const [account] = await sql(`select name from game_accounts where account_uuid = ?`, [steve.uuid]);
    assert.equal(account.name, "Steve");
    const [signIn] = (await activity("game_oauth.sign_in")).filter((e) => e.details.playerUuid === steve.uuid);
    assert.equal(signIn.details.playerName, "Steve");
  });

  it("a code another player holds reads as no sign-in on any server, even one that could not sign anyone in", async () => {
    const allowed = await w.createServer("Allowed");
    const outside = await w.createServer("Outside");
    const selective = await w.createClient({ name: "Selective", policy: { servers: [allowed.id] } });
    const { session } = await w.start({ clientId: selective.clientId });
    const alex = player("Alex");
    // Unclaimed, the server not allowed hears why.
    assert.match((await outside.agent!.playCommand(alex, command(session))).message, /^This server is not allowed to sign you in to Selective\./);
    assert.ok((await allowed.agent!.playCommand(player("Steve"), command(session))).confirmation);
    assert.deepEqual(await outside.agent!.playCommand(alex, command(session)), { accepted: false, message: noSignIn });
    // Nor does a stream whose agent key was replaced learn that it is held.
    const server = { id: allowed.id, organizationId: w.organizationId, name: "Allowed", game: "minecraft" };
    const code = session.loginCode.replace("-", "");
    const stale = await w.t.deps.loginVerifier.verify({ server, player: alex, code, agentKeyHash: "0".repeat(64) });
    assert.deepEqual(stale, { accepted: false, message: noSignIn });
  });

  it("of two players racing for one code, exactly one holds it", async () => {
    const { session, binding } = await w.start({ clientId });
    const racers = [player("Racer1"), player("Racer2")];
    const replies = await Promise.all([lobby.playCommand(racers[0], command(session)), arena.playCommand(racers[1], command(session))]);
    const winners = replies.filter((r) => r.confirmation);
    assert.equal(winners.length, 1, JSON.stringify(replies));
    assert.equal(replies.find((r) => !r.confirmation)!.message, noSignIn);
    const winner = replies[0].confirmation ? 0 : 1;
    assert.equal((await read(session, binding)).claim?.playerName, racers[winner].name);
    const [row] = await sql(`select claimed_player_uuid from hosted_authorizations where id = ?`, [session.sessionId]);
    assert.equal(row.claimed_player_uuid, racers[winner].uuid);
  });

  it("cancel releases the code: the page waits again and another player may claim it", async () => {
    const { session, binding } = await w.start({ clientId });
    const stream = w.oauth().watchAuthorization({ sessionId: session.sessionId, browserBindingHash: binding })[Symbol.asyncIterator]();
    assert.equal((await stream.next()).value.session.claim, undefined);
    const victim = player("Victim");
    await lobby.playCommand(victim, command(session));
    assert.equal((await stream.next()).value.session.claim?.playerName, "Victim");
    assert.deepEqual(await lobby.playCommand(victim, "/outpost cancel"), { accepted: false, message: "Cancelled: you were not signed in to Demo App." });
    const released = (await stream.next()).value.session as AuthorizationSession;
    assert.equal(released.status, AuthorizationStatus.PENDING);
    assert.equal(released.claim, undefined);
    assert.deepEqual(await lobby.confirm(victim), { accepted: false, message: nothingToConfirm });
    const [cancelled] = (await activity("game_oauth.sign_in_cancelled")).filter((e) => e.details.playerUuid === victim.uuid);
    assert.ok(cancelled, "game_oauth.sign_in_cancelled is recorded");
    const owner = player("Owner");
    assert.equal((await arena.playCommand(owner, command(session))).message, prompt);
    assert.equal((await arena.confirm(owner)).accepted, true);
    await stream.return?.();
  });

  it("a player's new claim replaces their earlier one on that server: the confirmation answers the last code", async () => {
    const first = await w.start({ clientId });
    const second = await w.start({ clientId });
    const steve = player("Steve");
    await lobby.playCommand(steve, command(first.session));
    await lobby.playCommand(steve, command(second.session));
    assert.equal((await read(first.session, first.binding)).claim, undefined, "the first is free again");
    assert.equal((await lobby.confirm(steve)).accepted, true);
    assert.equal((await read(second.session, second.binding)).status, AuthorizationStatus.COMPLETED);
    assert.equal((await read(first.session, first.binding)).status, AuthorizationStatus.PENDING);
    assert.deepEqual(await lobby.confirm(steve), { accepted: true, message: "Signed in to Demo App." }, "confirming twice is told it went through…");
    assert.equal((await read(first.session, first.binding)).status, AuthorizationStatus.PENDING, "…and completes nothing else");
  });

  it("a claim made on a server that is then deleted holds nothing: the page drops it and another player may claim the code", async () => {
    const { session, binding } = await w.start({ clientId });
    const doomed = await w.createServer("Doomed");
    await doomed.agent!.playCommand(player("Gone"), command(session));
    assert.equal((await read(session, binding)).claim?.serverName, "Doomed");
    await w.t.client(ServersService, { session: w.session }).deleteServer({ serverId: doomed.id });
    assert.equal((await read(session, binding)).claim, undefined);
    const next = player("Next");
    assert.equal((await lobby.playCommand(next, command(session))).message, prompt);
    assert.equal((await lobby.confirm(next)).accepted, true);
  });

  it("without a confirmation within 60 s the claim lapses: the code is free, and the sweep records it once", async () => {
    const { session, binding } = await w.start({ clientId });
    const slow = player("Slow");
    await lobby.playCommand(slow, command(session));
    w.t.clock.advance(60_001);
    try {
      // The agents' heartbeats at the moved clock, so the servers still read as online.
      await sql(`update servers set last_seen_at = ?`, [w.t.clock.now()]);
      assert.deepEqual(await lobby.confirm(slow), { accepted: false, message: nothingToConfirm });
      assert.equal((await read(session, binding)).claim, undefined);
      const [first, second] = await Promise.all([sweepLapsedClaims(w.t.orm.em, w.t.clock.now()), sweepLapsedClaims(w.t.orm.em, w.t.clock.now())]);
      // (Earlier tests' claims lapse too.)
      assert.equal([...first, ...second].filter((id) => id === session.sessionId).length, 1, "one sweep clears it, the other finds it gone");
      const expired = (await activity("game_oauth.sign_in_claim_expired")).filter((e) => e.details.playerUuid === slow.uuid);
      assert.equal(expired.length, 1);
      const quick = player("Quick");
      assert.equal((await arena.playCommand(quick, command(session))).message, prompt);
      assert.equal((await arena.confirm(quick)).accepted, true);
    } finally {
      w.t.clock.advance(-60_001);
    }
  });
});
