import assert from "node:assert/strict";
import { ActivityService } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { AuthorizationStatus, type AuthorizationSession } from "../../gen/outpost/gameoauth/v1/game_oauth_service_pb.js";
import { PlayerAuth } from "../../agent/client.ts";
import { command, createWorld, player, playAndConfirm, type World } from "./fixture.ts";

const offlineMode =
  "This server runs in offline mode, which cannot prove who you are, so it cannot sign you in. (Server owner: behind a proxy that authenticates players, run the agent with --auth proxy.)";

/**
 * The trust model: a server signs players in when it proves who they are (online mode, or offline
 * mode behind a proxy that does: `--auth proxy`); an offline-mode one only where the deployment
 * allows insecure game servers, and then the sign-in's activity says so. The servers API and the
 * hosted page's server list say which servers can.
 */
describe("Game OAuth: which game servers can sign players in", function () {
  this.timeout(60_000);

  describe("by default", () => {
    let w: World;
    before(async () => {
      w = await createWorld();
    });
    after(async () => {
      await w?.close();
    });

    it("online and proxy servers sign players in; an offline-mode one refuses in game and says why", async () => {
      const online = await w.createServer("Online");
      const proxied = await w.createServer("Proxied", { playerAuth: PlayerAuth.PROXY });
      const cracked = await w.createServer("Cracked", { playerAuth: PlayerAuth.OFFLINE });
      const silent = await w.createServer("Never connected", { connect: false });
      const { clientId } = await w.createClient({ policy: { servers: [online.id, proxied.id, cracked.id, silent.id] } });

      const first = await w.start({ clientId });
      const listed = Object.fromEntries(first.session.servers.map((s) => [s.name, [s.playerAuth, s.signInAllowed]]));
      assert.deepEqual(listed, {
        Online: [PlayerAuth.ONLINE, true],
        Proxied: [PlayerAuth.PROXY, true],
        Cracked: [PlayerAuth.OFFLINE, false],
        "Never connected": [PlayerAuth.UNSPECIFIED, false],
      });
      const servers = w.t.client(ServersService, { session: w.session });
      const signInAllowed = async (id: string) => (await servers.getServer({ serverId: id })).server!.signInAllowed;
      assert.deepEqual(
        [await signInAllowed(online.id), await signInAllowed(proxied.id), await signInAllowed(cracked.id), await signInAllowed(silent.id)],
        [true, true, false, false],
      );

      const steve = player("Steve");
      assert.deepEqual(await cracked.agent!.playCommand(steve, command(first.session)), { accepted: false, message: offlineMode });
      assert.deepEqual(await cracked.agent!.confirm(steve), { accepted: false, message: offlineMode });
      assert.equal((await playAndConfirm(proxied.agent!, steve, first.session)).accepted, true, "proxy: signed in");
      const second = await w.start({ clientId });
      assert.equal((await playAndConfirm(online.agent!, steve, second.session)).accepted, true, "online: signed in");
    });
  });

  describe("with ALLOW_INSECURE_GAME_SERVERS", () => {
    let w: World;
    before(async () => {
      w = await createWorld({ allowInsecureGameServers: true });
    });
    after(async () => {
      await w?.close();
    });

    const read = async (session: AuthorizationSession, binding: string) =>
      (await w.oauth().getAuthorization({ sessionId: session.sessionId, browserBindingHash: binding })).session!;

    it("an offline-mode server signs players in, and its sign-ins say in the activity log that it could not prove who they were", async () => {
      const cracked = await w.createServer("Cracked", { playerAuth: PlayerAuth.OFFLINE });
      const online = await w.createServer("Online");
      const { clientId } = await w.createClient({ policy: { servers: [cracked.id, online.id] } });
      const { session, binding } = await w.start({ clientId });
      assert.deepEqual(
        session.servers.map((s) => [s.name, s.signInAllowed]),
        [
          ["Cracked", true],
          ["Online", true],
        ],
      );
      assert.equal((await w.t.client(ServersService, { session: w.session }).getServer({ serverId: cracked.id })).server!.signInAllowed, true);

      const alex = player("Alex");
      assert.equal((await playAndConfirm(cracked.agent!, alex, session)).accepted, true);
      assert.equal((await read(session, binding)).status, AuthorizationStatus.COMPLETED);
      const { events } = await w.t.client(ActivityService, { session: w.session }).listOrganizationActivity({ organizationSlug: "acme" });
      const of = (action: string) => events.find((e) => e.action === action && e.details.playerUuid === alex.uuid)!;
      for (const action of ["game_oauth.sign_in_claimed", "game_oauth.sign_in"]) {
        assert.equal(of(action).details.playerAuth, "offline", action);
        assert.equal(of(action).details.insecureServer, "allowed by ALLOW_INSECURE_GAME_SERVERS", action);
      }

      // A sign-in on a server that does prove who the player is says nothing of the kind.
      const next = await w.start({ clientId });
      const bob = player("Bob");
      assert.equal((await playAndConfirm(online.agent!, bob, next.session)).accepted, true);
      const again = await w.t.client(ActivityService, { session: w.session }).listOrganizationActivity({ organizationSlug: "acme" });
      const signIn = again.events.find((e) => e.action === "game_oauth.sign_in" && e.details.playerUuid === bob.uuid)!;
      assert.equal(signIn.details.insecureServer, undefined);
    });
  });
});
