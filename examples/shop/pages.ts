/**
 * The shop's HTML: plain, server-rendered, every value escaped (player names, product names and
 * the console's output come from outside).
 */
import { findProduct, playerNameRule, products, type Order } from "./catalog.ts";
import type { Delivery, Purchase } from "./delivery.ts";

export const escape = (s: unknown) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const page = (title: string, body: string) =>
  `<!doctype html><html lang="en"><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>${escape(title)}</title>` +
  `<body style="font-family:sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem">${body}</body></html>`;

export interface ShopView {
  /** The purchase this form makes: new for a fresh page, the same after a refused name. */
  purchaseId: string;
  /** What the buyer typed and chose, shown again with `error`. */
  order?: Partial<Order>;
  error?: string;
  recent: Purchase[];
}

/** The product list and the buy form. */
export function shopPage(view: ShopView): string {
  const chosen = view.order?.productId ?? products[0].id;
  const choices = products
    .map(
      (p) =>
        `<li><label><input type="radio" name="productId" value="${escape(p.id)}"${p.id === chosen ? " checked" : ""}> ` +
        `<b>${escape(p.name)}</b> <span>${escape(p.price)}</span> <small>(${escape(p.item)} × ${p.count})</small></label></li>`,
    )
    .join("");
  const error = view.error ? `<p id="error" role="alert" style="color:#b00020"><b>${escape(view.error)}</b></p>` : "";
  return page(
    "Block Shop",
    `<h1>Block Shop</h1>${error}
<form method="post" action="/buy">
<input type="hidden" name="purchaseId" value="${escape(view.purchaseId)}">
<fieldset><legend>Products</legend><ul style="list-style:none;padding:0">${choices}</ul></fieldset>
<p><label>Your Minecraft name <input name="player" required minlength="3" maxlength="16" pattern="[A-Za-z0-9_]{3,16}" value="${escape(view.order?.player ?? "")}"></label>
<br><small>${escape(playerNameRule)} You must be online on the server to receive it.</small></p>
<p><button>Buy</button></p>
</form>${recentList(view.recent)}`,
  );
}

function recentList(recent: Purchase[]): string {
  if (!recent.length) return "";
  const rows = recent.map((p) => {
    const state = p.requestId ? "delivered" : (p.problem ?? "delivering…");
    return `<li><code>${escape(p.purchaseId.slice(0, 8))}</code> ${escape(findProduct(p.productId)?.name)} for ${escape(p.player)}: ${escape(state)}</li>`;
  });
  return `<h2>Recent purchases</h2><ul>${rows.join("")}</ul>`;
}

/** How a purchase's delivery went, with what the game server's console printed for it. */
export function deliveryPage(order: Order, delivery: Delivery): string {
  const product = findProduct(order.productId)!;
  const output = delivery.output.length ? `<h2>Console output</h2><pre id="output">${escape(delivery.output.join("\n"))}</pre>` : "";
  const request = delivery.requestId ? `<p>Outpost request <code id="request-id">${escape(delivery.requestId)}</code></p>` : "";
  return page(
    "Your purchase",
    `<h1>${escape(product.name)} for ${escape(order.player)}</h1>
<p id="outcome" data-outcome="${escape(delivery.outcome)}"><b>${escape(delivery.message)}</b></p>
<p>Purchase <code id="purchase-id">${escape(order.purchaseId)}</code></p>${request}${output}
<p><a href="/">Back to the shop</a></p>`,
  );
}
