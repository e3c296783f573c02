/**
 * Headless Chromium for page tests: Debian's `chromium` driven by playwright-core (no browser
 * download of its own), axe-core for the accessibility check, and screenshots for the docs.
 * (The Game OAuth browser test launches the same way inline; this is the shared form.)
 */
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { chromium, type Browser, type Page } from "playwright-core";

export const chromiumPath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

const screenshotDir = new URL("../../docs/screenshots/", import.meta.url);

/**
 * The page as the docs show it, `docs/screenshots/<name>.png`. The screenshot is always taken (so
 * the page renders), but written only with UPDATE_SCREENSHOTS=1: a plain test run leaves the
 * committed pictures alone instead of rewriting them with pixel noise.
 */
export async function docsScreenshot(page: Page, name: string): Promise<void> {
  const picture = await page.screenshot();
  if (process.env.UPDATE_SCREENSHOTS !== "1") return;
  mkdirSync(screenshotDir, { recursive: true });
  writeFileSync(new URL(`${name}.png`, screenshotDir), picture);
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: string[]; failureSummary?: string }>;
}

/** axe-core's serious and critical violations on the page as it is now (WCAG 2.x A/AA and best practices). */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  // Evaluated through the DevTools protocol, so the page's CSP (no inline script) does not block it.
  await page.evaluate(`${axeSource}\n;0`);
  const violations = await page.evaluate<AxeViolation[]>(
    `axe.run(document, { resultTypes: ["violations"] }).then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 5).map((n) => ({ target: n.target, failureSummary: n.failureSummary })) })))`,
  );
  return violations.filter((v) => v.impact === "serious" || v.impact === "critical");
}

/** Asserts no serious or critical axe violation, and no horizontal scrolling, at the page's width. */
export async function assertAccessible(page: Page, label: string): Promise<void> {
  const violations = await seriousViolations(page);
  assert.deepEqual(violations, [], `${label} (${page.viewportSize()?.width}px): ${JSON.stringify(violations, null, 1)}`);
  const widths = await page.evaluate<{ scroll: number; client: number }>(
    "({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth })",
  );
  if (widths.scroll > widths.client) {
    const wide = await page.evaluate<string[]>(
      `[...document.querySelectorAll("body *")].filter((e) => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1).slice(0, 8).map((e) => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + (e.className ? "." + String(e.className).replace(/ /g, ".") : "") + " " + Math.round(e.getBoundingClientRect().right))`,
    );
    assert.fail(`${label}: the page scrolls sideways (${widths.scroll} > ${widths.client}): ${wide.join(", ")}`);
  }
}

/**
 * A new page signed in to the dashboard at `baseUrl` as the wrap fixture's owner (owner@example.com),
 * landed on `path`; page errors go to `errors`. With `clock`, the page's timers run on Playwright's
 * clock (page.clock.runFor moves them).
 */
export async function signedInPage(browser: Browser, baseUrl: string, path: string, errors: string[], o: { clock?: boolean; height?: number } = {}): Promise<Page> {
  const page = await (await browser.newContext({ viewport: { width: 1280, height: o.height ?? 800 } })).newPage();
  page.setDefaultTimeout(15_000);
  page.on("pageerror", (e) => errors.push(`page error: ${e}`));
  if (o.clock) await page.clock.install();
  await page.goto(`${baseUrl}${path}`);
  await page.getByLabel("Email").fill("owner@example.com");
  await page.getByLabel("Password").fill("a long password");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL((u) => u.pathname === path);
  return page;
}
