/**
 * One load process of bench:fleet: agents of the real agent library, each on its own HTTP/2
 * connection, for the agent keys in the JSON file given as its second argument, connected to the
 * Outpost at its first. Each agent's console answers at once. Every 250 ms it prints a JSON line:
 * how many are connected now, how many connections were made in all, how many agents gave up.
 * It stops its agents when its stdin ends.
 */
import { readFileSync } from "node:fs";
import { Game } from "../gen/outpost/servers/v1/resources_pb.js";
import { PlayerAuth, startAgent, type Agent } from "../agent/client.ts";

const [url, keysFile] = process.argv.slice(2);
const keys = JSON.parse(readFileSync(keysFile, "utf8")) as string[];
const live = new Set<Agent>();
let connections = 0;
let gaveUp = 0;

const agents = keys.map((key) => {
  const agent: Agent = startAgent(
    {
      url,
      key,
      game: Game.MINECRAFT,
      playerAuth: PlayerAuth.ONLINE,
      reconnect: true,
      console: async (command) => ({ success: true, output: [`ran ${command}`] }),
    },
    (event) => {
      if (event.kind === "connected") {
        connections++;
        live.add(agent);
      } else if (event.kind === "disconnected") live.delete(agent);
      else if (event.kind === "stopped") {
        live.delete(agent);
        if (event.error) gaveUp++;
      }
    },
  );
  return agent;
});

const report = setInterval(() => process.stdout.write(`${JSON.stringify({ connected: live.size, connections, gaveUp })}\n`), 250);
process.stdin.resume();
process.stdin.on("end", async () => {
  clearInterval(report);
  await Promise.all(agents.map((a) => a.stop()));
  process.exit(0);
});
