/**
 * What the shop sells and who it sells to: each product is one `give` on the game server, and a
 * buyer is a Minecraft player name. Both are checked here, before anything reaches Outpost, because
 * the command is built from them: a name with a space in it would be a different command.
 */

export interface Product {
  id: string;
  name: string;
  /** A Minecraft item id, as `give` takes it. */
  item: string;
  count: number;
  price: string;
}

export const products: readonly Product[] = [
  { id: "diamonds-64", name: "64 diamonds", item: "diamond", count: 64, price: "€4.99" },
  { id: "golden-apples-16", name: "16 golden apples", item: "golden_apple", count: 16, price: "€2.99" },
  { id: "oak-logs-64", name: "A stack of oak logs", item: "oak_log", count: 64, price: "€0.99" },
  { id: "elytra", name: "Elytra", item: "elytra", count: 1, price: "€9.99" },
];

export function findProduct(id: string): Product | undefined {
  return products.find((p) => p.id === id);
}

/** Java Edition's rule for account names. */
const playerName = /^[A-Za-z0-9_]{3,16}$/;

export const playerNameRule = "A Minecraft player name is 3 to 16 characters: letters A–Z, digits and underscores.";

export function isPlayerName(name: string): boolean {
  return playerName.test(name);
}

/** crypto.randomUUID()'s form: the purchase id is the idempotency key, so nothing else is taken. */
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

export function isPurchaseId(id: string): boolean {
  return uuid.test(id);
}

/** One order as it arrives from the form or the payment webhook: untrusted until checked. */
export interface Order {
  purchaseId: string;
  player: string;
  productId: string;
}

/** What is wrong with an order, in words for the buyer; undefined when it can be delivered. */
export function orderProblem(order: Order): string | undefined {
  if (!isPurchaseId(order.purchaseId)) return "This purchase has no valid purchase id: reload the shop and buy again.";
  if (!findProduct(order.productId)) return "There is no such product.";
  if (!isPlayerName(order.player)) return playerNameRule;
  return undefined;
}

/** The console command that delivers `product` to `player` (both checked). */
export function giveCommand(player: string, product: Product): string {
  return `give ${player} ${product.item} ${product.count}`;
}
