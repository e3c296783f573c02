/**
 * Delivering a purchase: one `give` on the game server through Outpost's typed client, with the
 * purchase id as the idempotency key. That key is what makes delivery safe to repeat: a double
 * click, a resubmitted form and a payment provider's retried webhook all carry the same purchase
 * id, and Outpost answers every repeat with the first delivery's answer without running the
 * command again (for 24 hours). The shop itself keeps no lock and asks no question before
 * delivering, so two shop processes, or one restarted, would be just as safe.
 */
import { OutpostError, type OutpostClient } from "../../clients/typescript/src/index.ts";
import { findProduct, giveCommand, type Order } from "./catalog.ts";

/**
 * - `delivered`, `already_delivered`: the game server ran the give, the first time this purchase
 *   reached Outpost or earlier (the same Outpost request answers both).
 * - `conflict`: the purchase id was used for another order; Outpost refused it, nothing ran.
 * - `not_delivered`: the game server did not run it (offline, Outpost not reached); trying again
 *   with the same purchase id is safe.
 * - `needs_review`: the game server may have run it, or refused it; Outpost answers every retry the
 *   same for 24 hours, so a person decides (servers/getConsoleCommand with the request id says how it went).
 */
export type Outcome = "delivered" | "already_delivered" | "conflict" | "not_delivered" | "needs_review";

export interface Delivery {
  outcome: Outcome;
  /** For the buyer. */
  message: string;
  /** Outpost's record of the command (servers/getConsoleCommand), when it made one. */
  requestId?: string;
  /** What the game server's console printed for it. */
  output: string[];
}

/** A purchase as the shop first saw it, and what became of its delivery. */
export interface Purchase extends Order {
  at: Date;
  /** The Outpost request that ran its give, once delivered; every later answer for the purchase names the same one. */
  requestId?: string;
  /** Why it is not delivered yet, after a try that did not deliver it. */
  problem?: string;
}

/** The shop keeps its newest purchases only: a memory, not a ledger. */
const keptPurchases = 1_000;

export interface Deliveries {
  deliver(order: Order): Promise<Delivery>;
  /** The newest purchases first. */
  recent(count: number): Purchase[];
}

export function createDeliveries(client: OutpostClient, serverId: string): Deliveries {
  const purchases = new Map<string, Purchase>();

  /** The purchase under `order`'s id, recorded on first sight; a later, different order does not overwrite it. */
  function remember(order: Order): Purchase {
    let purchase = purchases.get(order.purchaseId);
    if (!purchase) {
      purchase = { purchaseId: order.purchaseId, player: order.player, productId: order.productId, at: new Date() };
      purchases.set(order.purchaseId, purchase);
      if (purchases.size > keptPurchases) purchases.delete(purchases.keys().next().value!);
    }
    return purchase;
  }

  async function deliver(order: Order): Promise<Delivery> {
    const purchase = remember(order);
    const command = giveCommand(order.player, findProduct(order.productId)!);
    let delivery: Delivery;
    try {
      // A double click's second request finds the first still running: Outpost holds it until the
      // first ends (and the client retries it, when that takes long), then answers it with the first's answer.
      const res = await client.servers.executeConsoleCommand({ serverId, command }, { idempotencyKey: order.purchaseId });
      delivery = answered(purchase, command, res);
    } catch (error) {
      delivery = refused(error);
    }
    // A conflict is another order's: this purchase is as it was.
    if (delivery.outcome === "not_delivered" && !purchase.requestId) purchase.problem = delivery.message;
    if (purchase.requestId) purchase.problem = undefined;
    return delivery;
  }

  return {
    deliver,
    recent: (count) => [...purchases.values()].reverse().slice(0, count),
  };
}

type Answer = Awaited<ReturnType<OutpostClient["servers"]["executeConsoleCommand"]>>;

/** Outpost's answer for the purchase; the first one the shop sees is the delivery, any other a replay of it. */
function answered(purchase: Purchase, command: string, res: Answer): Delivery {
  const output = [...res.output];
  if (!res.success) {
    // Replayed as it is for as long as the key lasts: delivering this purchase again needs a person.
    return { outcome: "needs_review", message: `The game server could not run the give: ${res.error}`, requestId: res.requestId, output };
  }
  if (purchase.requestId === res.requestId) {
    const message = "Already delivered: the game server ran this purchase's give once, and does not run it again.";
    return { outcome: "already_delivered", message, requestId: res.requestId, output };
  }
  purchase.requestId = res.requestId;
  // The console's lines say how the game took it (a player who is offline gets nothing): shown, not judged.
  return { outcome: "delivered", message: `Delivered: the game server ran ${command}.`, requestId: res.requestId, output };
}

/** What the buyer reads when Outpost refused the command or could not say how it went. */
function refused(thrown: unknown): Delivery {
  const error = OutpostError.from(thrown);
  const says = (message: string, outcome: Outcome = "not_delivered"): Delivery => ({ outcome, message, output: [] });
  switch (error.reason) {
    case "idempotency_key_reused":
      return says("This purchase id was already used for a different order: nothing was given for this one.", "conflict");
    case "idempotency_key_in_flight":
      return says("Another delivery of this purchase is still running: reload in a moment to see how it went.");
    case "agent_offline":
      return says("The game server is offline right now: nothing was given. Try again once it is back.");
    case "outcome_unknown":
      // The message names the request id, whose record says what became of the command.
      return says(`The game server did not answer in time, so it may or may not have been given: ${error.message}`, "needs_review");
    default:
      // Outpost unreachable (the client's own retries spent) is "unavailable"; trying again is safe with the key.
      return says(`The delivery did not go through (${error.code}: ${error.message}); trying again within 24 hours never gives twice.`);
  }
}
