/**
 * npm run example:shop — the shop (app.ts) configured from the environment:
 *
 *   OUTPOST_URL=http://localhost:3000 OUTPOST_API_KEY=opk_… OUTPOST_SERVER_ID=… SHOP_PORT=4100 npm run example:shop
 */
import { createShop } from "./app.ts";

function required(name: string, what: string): string {
  const value = process.env[name]?.trim();
  if (!value) throw new Error(`set ${name}: ${what} (examples/shop/README.md)`);
  return value;
}

const port = Number(process.env.SHOP_PORT ?? 4100);
if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`SHOP_PORT must be a port number, not ${JSON.stringify(process.env.SHOP_PORT)}`);

const shop = await createShop({
  outpostUrl: process.env.OUTPOST_URL ?? "http://localhost:3000",
  apiKey: required("OUTPOST_API_KEY", "an organization API key (opk_…), made on the organization's page in the dashboard"),
  serverId: required("OUTPOST_SERVER_ID", "the id of the game server that delivers (servers/listServers)"),
  port,
});
console.log(`shop on ${shop.url.replace("127.0.0.1", "localhost")}`);
for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => void shop.close().then(() => process.exit(0)));
