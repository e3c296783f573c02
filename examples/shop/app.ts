/**
 * A small web shop that sells game items and delivers them through Outpost: `GET /` lists the
 * products with a buy form, `POST /buy` takes the form, and `POST /webhooks/payment` takes a
 * payment provider's JSON notice `{purchaseId, player, productId}`. Each delivers by running
 * `give <player> <item> <count>` on one game server with the typed client and an organization API
 * key, the purchase id as the idempotency key (delivery.ts says why that is enough).
 *
 * The purchase id is made when the form is rendered and travels in it as a hidden field, so a double
 * click or a resubmitted form carries the same one rather than making a second purchase.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { randomUUID } from "node:crypto";
import type { AddressInfo } from "node:net";
import { createOutpostClient } from "../../clients/typescript/src/index.ts";
import { isPurchaseId, orderProblem, type Order } from "./catalog.ts";
import { createDeliveries, type Deliveries, type Delivery, type Outcome } from "./delivery.ts";
import { deliveryPage, shopPage } from "./pages.ts";

export interface ShopOptions {
  /** Outpost's base URL (its ACCOUNT_BASE_URL), e.g. http://localhost:3000. */
  outpostUrl: string;
  /** An organization API key (`opk_…`) of the server's organization, whose creator may run console commands there. */
  apiKey: string;
  /** The game server that delivers, which must have a console (a wrapped server or the flying-squid plugin). */
  serverId: string;
  /** 0 for any free port. */
  port: number;
  /** Default 127.0.0.1: the shop has no sign-in, so it is not put on a network by accident. */
  host?: string;
}

export interface Shop {
  url: string;
  close(): Promise<void>;
}

/** A webhook answered with anything but 2xx is sent again by the payment provider, which is what "not delivered" wants. */
// A webhook's sender retries a 5xx: only for what surely gave nothing. What may have been given is
// accepted (202) and left to a person, since Outpost forgets the key after 24 hours and a retry
// past that would give again.
const statusOf: Record<Outcome, number> = { delivered: 200, already_delivered: 200, conflict: 409, not_delivered: 503, needs_review: 202 };
const maxBodyBytes = 16 * 1024;
const recentShown = 10;

/** A request the shop refuses before looking at it further, answered in plain text. */
class BadRequest extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

export async function createShop(options: ShopOptions): Promise<Shop> {
  const client = createOutpostClient({ baseUrl: options.outpostUrl, apiKey: options.apiKey });
  const deliveries = createDeliveries(client, options.serverId);
  const server = createServer((req, res) => {
    handle(deliveries, req, res).catch((error) => {
      const status = error instanceof BadRequest ? error.status : 500;
      if (status === 500) console.error("shop:", error);
      if (!res.headersSent) res.writeHead(status, { "content-type": "text/plain; charset=utf-8" }).end(status === 500 ? "The shop failed." : error.message);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host ?? "127.0.0.1", resolve);
  });
  const { address, port } = server.address() as AddressInfo;
  return {
    url: `http://${address.includes(":") ? `[${address}]` : address}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function handle(deliveries: Deliveries, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const route = `${req.method} ${new URL(req.url ?? "/", "http://shop").pathname}`;
  if (route === "GET /") {
    html(res, 200, shopPage({ purchaseId: randomUUID(), recent: deliveries.recent(recentShown) }));
  } else if (route === "POST /buy") {
    await buy(deliveries, req, res);
  } else if (route === "POST /webhooks/payment") {
    await paymentWebhook(deliveries, req, res);
  } else {
    res.writeHead(404, { "content-type": "text/plain; charset=utf-8" }).end("not found");
  }
}

/** The buy form: a refused name shows the form again with the same purchase id, so fixing it buys once. */
async function buy(deliveries: Deliveries, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const form = new URLSearchParams(await readBody(req));
  const order: Order = { purchaseId: form.get("purchaseId") ?? "", player: (form.get("player") ?? "").trim(), productId: form.get("productId") ?? "" };
  const problem = orderProblem(order);
  if (problem) {
    const purchaseId = isPurchaseId(order.purchaseId) ? order.purchaseId : randomUUID();
    return html(res, 400, shopPage({ purchaseId, order, error: problem, recent: deliveries.recent(recentShown) }));
  }
  const delivery = await deliveries.deliver(order);
  html(res, statusOf[delivery.outcome], deliveryPage(order, delivery));
}

/**
 * The payment provider's notice that a purchase is paid. A real one is signed by the provider and
 * must be checked before anything is delivered; this example leaves that out (README.md).
 */
async function paymentWebhook(deliveries: Deliveries, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (!/^application\/json\b/i.test(req.headers["content-type"] ?? "")) throw new BadRequest(415, "expected Content-Type: application/json");
  let body: unknown;
  try {
    body = JSON.parse(await readBody(req));
  } catch {
    throw new BadRequest(400, "the body is not JSON");
  }
  const field = (name: keyof Order) => {
    const value = (body as Record<string, unknown> | null)?.[name];
    return typeof value === "string" ? value : "";
  };
  const order: Order = { purchaseId: field("purchaseId"), player: field("player"), productId: field("productId") };
  const problem = orderProblem(order);
  if (problem) return json(res, 400, { error: problem });
  const delivery: Delivery = await deliveries.deliver(order);
  json(res, statusOf[delivery.outcome], { purchaseId: order.purchaseId, ...delivery });
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBodyBytes) throw new BadRequest(413, "the body is too large");
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

function html(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { "content-type": "text/html; charset=utf-8" }).end(body);
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
}
