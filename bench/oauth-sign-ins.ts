/**
 * Authorization codes for bench/oauth.ts, minted through the real flows: a Game OAuth sign-in as a
 * browser and a player make it (the hosted page, its ALTCHA challenge solved here, the in-game
 * `/outpost login` and confirmation played by an in-process agent, the redirect URL pushed over
 * server-sent events), and Account OAuth authorizations of a signed-in user to a first-party client.
 */
import { createHash, hash, randomUUID } from "node:crypto";
import type { Agent } from "../agent/client.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

export const redirectUri = "http://127.0.0.1:9/callback";
export const codeVerifier = "bench-verifier-0123456789-abcdefghijklmnopqrstuvwxyz-ABCDEFG";
const codeChallenge = createHash("sha256").update(codeVerifier).digest("base64url");

/** An issuer's authorize URL for `clientId`, with PKCE (S256) and the bench's redirect URI. */
export function authorizeUrl(endpoint: string, clientId: string, scope: string): string {
  const query = new URLSearchParams({
    response_type: "code",
    client_id: clientId,
    redirect_uri: redirectUri,
    scope,
    state: "bench-state",
    nonce: "bench-nonce",
    code_challenge: codeChallenge,
    code_challenge_method: "S256",
  });
  return `${endpoint}?${query}`;
}

/** The ALTCHA v1 proof of work, solved synchronously (what the page's script does with WebCrypto). */
function solve(challenge: { challenge: string; salt: string; maxnumber?: number; maxNumber?: number }): number {
  const max = challenge.maxnumber ?? challenge.maxNumber ?? 1_000_000;
  for (let n = 0; n <= max; n++) {
    if (hash("sha256", challenge.salt + n, "hex") === challenge.challenge) return n;
  }
  throw new Error("challenge not solvable");
}

const decode = (s: string) =>
  s
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&");

export interface SignIn {
  code: string;
  /** From the agent sending the player's confirmation to the page's stream receiving the redirect URL. */
  reportToRedirectMs: number;
  /** From the same moment to the agent receiving the in-game reply. */
  reportToReplyMs: number;
}

/** The hosted page opened, its challenge solved: the sign-in's session, its cookie and the command to type. */
async function openHostedPage(gameIssuerUrl: string, authorize: string): Promise<{ session: string; cookie: string; command: string }> {
  const page = await fetch(authorize, { redirect: "manual" });
  if (page.status !== 200) throw new Error(`authorize: ${page.status} ${await page.text()}`);
  const cookie = page.headers.get("set-cookie")!.split(";")[0];
  const html = await page.text();
  const session = /data-session="([^"]+)"/.exec(html)![1];
  const challenge = JSON.parse(decode(/data-challenge="([^"]+)"/.exec(html)![1]));
  const payload = Buffer.from(JSON.stringify({ ...challenge, number: solve(challenge) })).toString("base64");
  const verified = await fetch(`${gameIssuerUrl}/oauth2/authorize/verify-challenge`, {
    method: "POST",
    headers: { "content-type": "application/json", cookie },
    body: JSON.stringify({ session, payload }),
  });
  if (verified.status !== 200) throw new Error(`verify-challenge: ${verified.status} ${await verified.text()}`);
  const { command } = (await verified.json()) as Json;
  return { session, cookie, command };
}

/** Reads the page's event stream until it carries the redirect URL; returns it and when it came. */
async function redirectFrom(reader: ReadableStreamDefaultReader<string>, text: string): Promise<{ redirectUrl: string; receivedAt: number }> {
  for (;;) {
    const chunk = await reader.read();
    if (chunk.done) throw new Error(`events ended without a redirect: ${text}`);
    text += chunk.value;
    for (const block of text.split("\n\n")) {
      const data = block.split("\n").find((l) => l.startsWith("data: "));
      if (!data) continue;
      const event = JSON.parse(data.slice(6));
      if (event.redirect_url) return { redirectUrl: event.redirect_url, receivedAt: performance.now() };
    }
  }
}

/** One whole Game OAuth sign-in as a browser and a player make it. */
export async function gameSignIn(gameIssuerUrl: string, authorize: string, agent: Agent): Promise<SignIn> {
  const { session, cookie, command } = await openHostedPage(gameIssuerUrl, authorize);
  const events = await fetch(`${gameIssuerUrl}/oauth2/authorize/events?session=${session}`, { headers: { cookie } });
  if (events.status !== 200) throw new Error(`events: ${events.status}`);
  const reader = events.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("\n\n")) text += (await reader.read()).value;
  const player = { name: "Steve", uuid: randomUUID() };
  const claimed = await agent.playCommand(player, command, 30_000);
  if (!claimed.confirmation) throw new Error(`not asked to confirm in game: ${claimed.message}`);
  const started = performance.now();
  let repliedAt = 0;
  const reply = agent.confirm(player, 30_000).then((r) => ((repliedAt = performance.now()), r));
  const { redirectUrl, receivedAt } = await redirectFrom(reader, text);
  await reader.cancel().catch(() => {});
  const answer = await reply;
  if (!answer.accepted) throw new Error(`refused in game: ${answer.message}`);
  const code = new URL(redirectUrl).searchParams.get("code");
  if (!code) throw new Error(`no code in ${redirectUrl}`);
  return { code, reportToRedirectMs: receivedAt - started, reportToReplyMs: repliedAt - started };
}

/** `count` results of `one`, `concurrency` at a time, worker `w` passing `w` (to spread them over agents). */
export async function inParallel<T>(count: number, concurrency: number, one: (worker: number) => Promise<T>): Promise<T[]> {
  const results: T[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async (_, worker) => {
      while (next < count) {
        next++;
        results.push(await one(worker));
      }
    }),
  );
  return results;
}

/** A code from one Account OAuth authorization of the signed-in user (a first-party client: no consent). */
export async function accountCode(authorize: string, sessionCookie: string): Promise<string> {
  const res = await fetch(authorize, { redirect: "manual", headers: { cookie: sessionCookie } });
  const code = new URL(res.headers.get("location") ?? "http://invalid/").searchParams.get("code");
  if (!code) throw new Error(`account authorize: ${res.status} ${res.headers.get("location")} ${await res.text()}`);
  return code;
}
