import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { VerifierPolicy } from "../../gen/outpost/organizations/v1/resources_pb.js";
import type { Agent } from "../../agent/client.ts";
import { rejectsWith } from "../support/errors.ts";
import { command, createWorld, player, redirectUri, type World } from "./fixture.ts";

/**
 * A Game OAuth client's name is chosen by whoever registers the client, and players read it in the
 * in-game prompt beside the app's host, the prompt's main defence against phishing. Minecraft's §
 * formatting codes (§k scrambles the rest of the line), control characters and bidirectional text
 * controls could hide or reorder that host: they are refused in a name, and stripped from any name
 * stored before that rule, wherever a player reads it.
 */
describe("Game OAuth: what an app's name may hide", function () {
  this.timeout(60_000);
  let w: World;
  let lobby: Agent;
  const organizations = () => w.t.client(OrganizationsService, { session: w.session });

  before(async () => {
    w = await createWorld();
    lobby = (await w.createServer("Lobby")).agent!;
  });
  after(async () => {
    await w?.close();
  });

  const oneLine = "name: must be one line, without control characters or bidirectional text controls";
  const formatting = "name: must not contain § formatting codes: players read the name in game beside the app's host";
  const hiding = [
    ["a Minecraft formatting code", "Demo App §k", formatting],
    ["a right-to-left override", "Demo App \u202Emoc.elpmaxe", oneLine],
    ["a bidirectional isolate", "Demo \u2066App\u2069", oneLine],
    ["a left-to-right mark", "Demo\u200EApp", oneLine],
    ["a control character", "Demo\rApp", oneLine],
    ["a C1 control character", "Demo\u009bApp", oneLine],
  ];

  for (const [what, name, says] of hiding) {
    it(`refuses a name with ${what}, on creation and on update, saying why`, async () => {
      const created = organizations().createGameOAuthClient({
        organizationSlug: "acme",
        name,
        redirectUris: [redirectUri],
        verifierPolicy: VerifierPolicy.ANY_SERVER,
      });
      const error = await rejectsWith(created, Code.InvalidArgument);
      assert.equal(error.rawMessage, says);
      const { clientId } = await w.createClient({ name: "Plain" });
      const updated = await rejectsWith(organizations().updateGameOAuthClient({ clientId, name }), Code.InvalidArgument);
      assert.equal(updated.rawMessage, says);
      await organizations().deleteGameOAuthClient({ clientId });
    });
  }

  it("keeps accepting names in any script, with accents, emoji and joiners", async () => {
    for (const name of ["Café Ω", "مرحبا بالعالم", "שלום", "👩‍💻 Dev Portal", "Forum 2.0 — beta"]) {
      const { clientId } = await w.createClient({ name });
      await organizations().deleteGameOAuthClient({ clientId });
    }
  });

  it("strips them from a name stored before the rule: in the prompt, its parts, the page and the reply", async () => {
    const { clientId } = await w.createClient({ name: "Plain" });
    const stored = "§4Demo §kApp\u202E\u2066 \u0007";
    await w.t.orm.em.fork().getConnection().execute(`update game_oauth_clients set name = ? where client_id = ?`, [stored, clientId]);
    const { session, binding } = await w.start({ clientId });
    assert.equal(session.clientName, "Demo App", "the page's text");
    const steve = player("Steve");
    const reply = await lobby.playCommand(steve, command(session));
    assert.equal(reply.message, "Sign in to Demo App at app.example.com? Type /outpost confirm within 60 s — only if you started this yourself.");
    assert.equal(reply.confirmation?.appName, "Demo App");
    const shown = (await w.oauth().getAuthorization({ sessionId: session.sessionId, browserBindingHash: binding })).session!;
    assert.equal(shown.clientName, "Demo App");
    assert.deepEqual(await lobby.confirm(steve), { accepted: true, message: "Signed in to Demo App." });
  });
});
