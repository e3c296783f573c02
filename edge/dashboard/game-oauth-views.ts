/**
 * The Game OAuth client pages of an organization: the list with the creation form, each client's
 * page (what an app needs to connect, then edit, secret, disable, delete) and the page that shows
 * a new secret once. The forms they post are handled in game-oauth.ts.
 */
import type { Context } from "koa";
import { VerifierPolicy, type GameOAuthClient, type Organization } from "../../gen/outpost/organizations/v1/resources_pb.js";
import type { Server } from "../../gen/outpost/servers/v1/resources_pb.js";
import { managedOrgOf, noticeOf, render, type Viewer } from "./context.ts";
import type { FormErrors } from "./core.ts";
import { defaultSigningAlg } from "../../contract/issuers.ts";
import { gameName, policyName, when } from "./format.ts";
import { choiceGroup, dangerForm, formAlert, idTokenAlgField, postForm, textArea, textField } from "./forms.ts";
import { html, type Html } from "../html.ts";
import { chartAssets, copyValue, secretBlock } from "./layout.ts";
import { chartFigure } from "./charts.ts";
import type { GameOAuthClientDay } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { orgPath } from "./paths.ts";

/** The client form's values as typed (kept when a form comes back refused). */
export interface ClientValues {
  name: string;
  redirectUris: string;
  policy: string;
  servers: string[];
  idTokenAlg: string;
}

const fields = ["name", "redirectUris", "verifierPolicy", "allowedServerIds", "idTokenSignedResponseAlg"];

/** The organization of the URL, when the viewer may manage its clients (owner or admin); else a 403 page. */
export function managed(v: Viewer, slug: string): Organization {
  return managedOrgOf(v, slug, "manage its Game OAuth clients");
}

function clientFields(servers: readonly Server[], values: ClientValues, errors?: FormErrors): Html {
  return html`${formAlert(errors, fields)}
${textField({ name: "name", label: "Name", value: values.name, required: true, maxlength: 80, hint: "Shown to players on the sign-in page and in game.", errors })}
${textArea({
  name: "redirectUris",
  label: "Redirect URIs",
  value: values.redirectUris,
  required: true,
  rows: 3,
  hint: "One per line, 1 to 16, exactly as your app sends them. https, except on localhost.",
  errors,
})}
${choiceGroup({
  name: "verifierPolicy",
  legend: "Which game servers may verify a sign-in",
  type: "radio",
  options: [
    { value: "any_server", label: "Any server of the organization" },
    { value: "selected_servers", label: "Only the servers selected below" },
  ],
  checked: new Set([values.policy]),
  errors,
})}
${
  servers.length
    ? choiceGroup({
        name: "allowedServerIds",
        legend: "Selected servers",
        type: "checkbox",
        hint: "Used with “Only the servers selected below”.",
        options: servers.map((s) => ({ value: s.id, label: `${s.name} (${gameName(s.game)})` })),
        checked: new Set(values.servers),
        errors,
      })
    : html`<p class="hint">The organization has no servers yet; “Only selected servers” needs at least one.</p>`
}
${idTokenAlgField(values.idTokenAlg, errors)}`;
}

export async function listPage(ctx: Context, v: Viewer, values?: ClientValues, errors?: FormErrors, status = 200): Promise<void> {
  const org = managed(v, ctx.params.slug);
  const [{ clients }, { servers }] = await Promise.all([
    v.core.organizations.listGameOAuthClients({ organizationSlug: org.slug }),
    v.core.servers.listServers({ organizationSlug: org.slug }),
  ]);
  const rows = clients.map(
    (c) =>
      html`<tr><td><a href="${orgPath(org, `/clients/${c.clientId}`)}">${c.name}</a></td><td class="mono">${c.clientId}</td><td>${c.disabled ? html`<span class="status offline">Disabled</span>` : html`<span class="status online">Enabled</span>`}</td><td>${policyName(c.verifierPolicy)}</td><td>${when(c.createdAt)}</td></tr>`,
  );
  render(
    ctx,
    v,
    {
      title: "Game OAuth clients",
      org,
      section: "clients",
      notice: noticeOf(ctx),
      lede: "Apps that sign players in with their game account: the player proves it with /outpost login on one of your servers.",
      body: html`${
        clients.length
          ? html`<div class="table-wrap" role="region" tabindex="0" aria-label="Game OAuth clients of ${org.name}"><table><caption class="sr-only">Game OAuth clients of ${org.name}</caption><thead><tr><th scope="col">Name</th><th scope="col">Client ID</th><th scope="col">State</th><th scope="col">Verifier policy</th><th scope="col">Created</th></tr></thead><tbody>${rows}</tbody></table></div>`
          : html`<p class="empty">No Game OAuth clients yet.</p>`
      }
<h2 id="create-client-heading">Create a client</h2>
${postForm(
  orgPath(org, "/clients"),
  v.formToken,
  html`${clientFields(servers, values ?? { name: "", redirectUris: "", policy: "any_server", servers: [], idTokenAlg: defaultSigningAlg }, errors)}
<div class="actions"><button type="submit" class="btn primary">Create client</button></div>`,
  html` class="panel stack" aria-labelledby="create-client-heading"`,
)}`,
    },
    status,
  );
}

function issuerUrls(v: Viewer): { issuer: string; discovery: string } | undefined {
  if (!v.deps.gameIssuerUrl) return undefined;
  const issuer = v.deps.gameIssuerUrl.origin;
  return { issuer, discovery: `${issuer}/.well-known/openid-configuration` };
}

function snippet(v: Viewer, c: GameOAuthClient): string {
  const issuer = issuerUrls(v)?.issuer ?? "<GAME_ISSUER_URL>";
  const alg = c.idTokenSignedResponseAlg;
  const metadata = alg === defaultSigningAlg ? "process.env.CLIENT_SECRET" : `{ client_secret: process.env.CLIENT_SECRET, id_token_signed_response_alg: "${alg}" }`;
  return `import * as oidc from "openid-client";

const config = await oidc.discovery(new URL("${issuer}"), "${c.clientId}", ${metadata});
const verifier = oidc.randomPKCECodeVerifier();
const url = oidc.buildAuthorizationUrl(config, {
  redirect_uri: "${c.redirectUris[0] ?? "https://app.example.com/callback"}",
  scope: "openid profile",
  code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
  code_challenge_method: "S256",
  state: oidc.randomState(),
});
// …send the browser to url; on the callback:
const tokens = await oidc.authorizationCodeGrant(config, callbackUrl, { pkceCodeVerifier: verifier, expectedState: state });
const { sub, game, game_account_name } = tokens.claims();`;
}

/** What an app needs to connect: the ids and URLs, the policy, the redirect URIs, a snippet. */
function connectSection(v: Viewer, c: GameOAuthClient, servers: readonly Server[]): Html {
  const urls = issuerUrls(v);
  const byId = new Map(servers.map((s) => [s.id, s]));
  return html`<section class="panel stack" aria-labelledby="connect-heading">
<h2 id="connect-heading">Connect your app</h2>
${copyValue("client-id", "Client ID", c.clientId)}
${urls ? copyValue("issuer-url", "Issuer URL", urls.issuer) : html`<p class="alert">The Game OAuth issuer URL is not configured on this dashboard.</p>`}
${urls ? copyValue("discovery-url", "Discovery URL", urls.discovery) : ""}
<dl class="facts">
<div><dt>Client secret</dt><dd><span class="mono">${c.clientSecretPrefix}…</span> (shown only when created or rotated)</dd></div>
<div><dt>Verifier policy</dt><dd>${policyName(c.verifierPolicy)}${
    c.verifierPolicy === VerifierPolicy.SELECTED_SERVERS ? html`: ${c.allowedServerIds.map((id, i) => html`${i ? ", " : ""}${byId.get(id)?.name ?? id}`)}` : ""
  }</dd></div>
<div><dt>ID tokens signed with</dt><dd class="mono">${c.idTokenSignedResponseAlg}</dd></div>
<div><dt>Redirect URIs</dt><dd><ul class="plain">${c.redirectUris.map((u) => html`<li class="mono">${u}</li>`)}</ul></dd></div>
</dl>
<details class="snippet"><summary>How to integrate</summary>
<p>Any OpenID Connect library works: discovery from the issuer URL, the authorization code flow with PKCE, scopes <span class="mono">openid profile</span>, the secret on your backend only. With <span class="mono">openid-client</span> in Node.js:</p>
<pre tabindex="0"><code>${snippet(v, c)}</code></pre>
</details>
</section>`;
}

/** Edit, rotate the secret, disable or enable, delete. */
function manageSections(v: Viewer, c: GameOAuthClient, base: string, form: Html): Html {
  return html`<section class="panel stack" aria-labelledby="edit-heading">
<h2 id="edit-heading">Edit</h2>
${form}
</section>
<section class="panel stack" aria-labelledby="secret-heading">
<h2 id="secret-heading">Client secret</h2>
<p>If the secret leaked, rotate it: the current one stops working for every new code exchange at once. Tokens already issued stay valid until they expire.</p>
${dangerForm({ action: `${base}/rotate-secret`, token: v.formToken, label: "Rotate secret", confirm: `Rotate the secret of ${c.name}?`, consequence: "The current secret stops working at once; your app needs the new one." })}
</section>
<section class="panel stack danger-zone" aria-labelledby="state-heading">
<h2 id="state-heading">Disable or delete</h2>
<p>A disabled client starts no new sign-ins and exchanges no codes; tokens already issued stay valid until they expire.</p>
<div class="actions">
${
  c.disabled
    ? postForm(`${base}/enable`, v.formToken, html`<button type="submit" class="btn">Enable client</button>`, html` class="inline"`)
    : dangerForm({
        action: `${base}/disable`,
        token: v.formToken,
        label: "Disable client",
        confirm: `Disable ${c.name}?`,
        consequence: "It starts no new sign-ins and exchanges no codes until you enable it again.",
        buttonClass: "danger-outline",
      })
}
${dangerForm({ action: `${base}/delete`, token: v.formToken, label: "Delete client", confirm: `Delete the client ${c.name}?`, consequence: "Apps using it can no longer sign players in. This cannot be undone." })}
</div>
</section>`;
}

export async function clientPage(ctx: Context, v: Viewer, values?: ClientValues, errors?: FormErrors, status = 200): Promise<void> {
  const org = managed(v, ctx.params.slug);
  const [{ client }, { servers }, { days }] = await Promise.all([
    v.core.organizations.getGameOAuthClient({ clientId: ctx.params.clientId }),
    v.core.servers.listServers({ organizationSlug: org.slug }),
    v.core.organizations.getGameOAuthClientStats({ clientId: ctx.params.clientId, days: 30 }),
  ]);
  const c = client!;
  const base = orgPath(org, `/clients/${c.clientId}`);
  const current: ClientValues = {
    name: c.name,
    redirectUris: c.redirectUris.join("\n"),
    policy: c.verifierPolicy === VerifierPolicy.SELECTED_SERVERS ? "selected_servers" : "any_server",
    servers: c.allowedServerIds,
    idTokenAlg: c.idTokenSignedResponseAlg,
  };
  const form = postForm(
    base,
    v.formToken,
    html`${clientFields(servers, values ?? current, errors)}<div class="actions"><button type="submit" class="btn primary">Save changes</button></div>`,
    html` class="stack"`,
  );
  render(
    ctx,
    v,
    {
      title: c.name,
      org,
      section: "clients",
      notice: noticeOf(ctx),
      crumbs: [{ href: orgPath(org, "/clients"), label: "Game OAuth clients" }],
      lede: html`${c.disabled ? html`<span class="status offline">Disabled</span> ` : html`<span class="status online">Enabled</span> `}Created ${when(c.createdAt)}`,
      ...chartAssets,
      body: html`${connectSection(v, c, servers)}
${signInsSection(days)}
${manageSections(v, c, base, form)}`,
    },
    status,
  );
}

export function secretPage(ctx: Context, v: Viewer, org: Organization, c: GameOAuthClient, secret: string, created: boolean): void {
  const urls = issuerUrls(v);
  render(ctx, v, {
    title: created ? `Client "${c.name}" created` : `New secret for "${c.name}"`,
    org,
    section: "clients",
    crumbs: [{ href: orgPath(org, "/clients"), label: "Game OAuth clients" }],
    lede: created
      ? "Configure your app with these values. The secret belongs on your app's backend only."
      : "The previous secret no longer works. Update your app's backend with this one.",
    body: html`<section class="panel stack reveal" aria-labelledby="secret-heading">
<h2 id="secret-heading">Client credentials</h2>
${copyValue("client-id", "Client ID", c.clientId)}
${secretBlock("client-secret", "Client secret", secret, "It is shown only this once: Outpost keeps only a hash. If you lose it, rotate it on the client's page.")}
${urls ? copyValue("issuer-url", "Issuer URL", urls.issuer) : ""}
<div class="actions"><a class="btn primary" href="${orgPath(org, `/clients/${c.clientId}`)}">Go to the client</a></div>
</section>`,
  });
}

/** Sign-ins per day over the last 30 days, as a chart with its table. */
function signInsSection(days: readonly GameOAuthClientDay[]): Html {
  const total = (pick: (d: GameOAuthClientDay) => number) => days.reduce((n, d) => n + pick(d), 0);
  const [started, signedIn, exchanged] = [total((d) => d.started), total((d) => d.signedIn), total((d) => d.exchanged)];
  const share = started ? ` (${Math.round((signedIn / started) * 100)} % of those started)` : "";
  const summary = started
    ? `Over the last 30 days ${started} sign-ins started, ${signedIn} were completed in game${share} and ${exchanged} exchanged by the app for tokens.`
    : "No sign-ins started in the last 30 days.";
  return html`<section class="panel stack" aria-labelledby="sign-ins-heading">
<h2 id="sign-ins-heading">Sign-ins</h2>
${chartFigure({
  id: "chart-sign-ins",
  title: "Sign-ins per day",
  unit: "count",
  days: true,
  times: days.map((d) => Date.parse(`${d.day}T00:00:00Z`)),
  lines: [
    { label: "Started", values: days.map((d) => d.started) },
    { label: "Signed in", values: days.map((d) => d.signedIn) },
    { label: "Exchanged", values: days.map((d) => d.exchanged) },
  ],
  summary,
  span: [Date.parse(`${days[0].day}T00:00:00Z`), Date.parse(`${days[days.length - 1].day}T00:00:00Z`)],
})}
</section>`;
}
