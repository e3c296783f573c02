/** The page shell: header with the organization switcher, section tabs, notices, main content. */
import { AssetSet, page } from "../pages.ts";
import { Role, type Organization } from "../../gen/outpost/organizations/v1/resources_pb.js";
import type { User } from "../../gen/outpost/auth/v1/resources_pb.js";
import { html, type Html } from "../html.ts";
import { postForm } from "./forms.ts";
import { canManage } from "./format.ts";

export const assets = new AssetSet("/app/assets/", new URL("./assets/", import.meta.url), [
  "dashboard.css",
  "dashboard.js",
  "console.js",
  "push.js",
  "chat.js",
  "files.js",
  "editor.js",
  "charts.js",
  ["uPlot.iife.min.js", new URL(import.meta.resolve("uplot/dist/uPlot.iife.min.js"))],
  ["uPlot.min.css", new URL(import.meta.resolve("uplot/dist/uPlot.min.css"))],
  "favicon.svg",
  "icon-192.png",
  "icon-512.png",
  "icon-maskable-512.png",
]);

/** What a page with charts (charts.ts) adds to its scripts and styles. */
export const chartAssets = { scripts: ["uPlot.iife.min.js", "charts.js"], styles: ["uPlot.min.css"] } as const;

/** The web app manifest's path (edge/dashboard/pwa.ts serves it) and the browser UI's colour. */
export const manifestPath = "/app/manifest.webmanifest";
export const themeColor = "#3346d3";

/** The signed-in person as every page needs them. */
export interface Shell {
  user: User;
  organizations: readonly Organization[];
  formToken: string;
  /** The organization last opened (a cookie), preselected in the switcher outside organization pages. */
  lastOrg?: string;
  /** Unread notifications, for the bell. */
  unread: number;
}

/** Fixed messages a redirect-after-post can ask for with `?notice=` (never text from the request). */
export const notices: Record<string, string> = {
  "org-created": "Organization created.",
  "org-renamed": "Organization renamed.",
  "org-deleted": "Organization deleted.",
  "member-added": "Member added.",
  "member-updated": "Role changed.",
  "member-removed": "Member removed.",
  left: "You left the organization.",
  "invitation-revoked": "Invitation revoked: its link no longer works.",
  "invitation-accepted": "Welcome: you joined the organization.",
  "org-key-revoked": "Organization API key revoked. It stops working at once.",
  "server-renamed": "Server renamed.",
  "server-deleted": "Server deleted.",
  "server-starting": "The server is starting.",
  "server-stopping": "The server is stopping: it saves first.",
  "server-restarting": "The server is restarting: it saves and stops, then starts again.",
  "server-killed": "The server was killed.",
  "server-unchanged": "Nothing to do: the server already was as asked.",
  "schedule-created": "Schedule added.",
  "schedule-ran": "Schedule run: see its last run below.",
  "schedule-paused": "Schedule paused: it does not run until you resume it.",
  "schedule-resumed": "Schedule resumed.",
  "schedule-deleted": "Schedule deleted.",
  "grant-created": "Access granted.",
  "grant-revoked": "Access revoked.",
  "access-requested": "Access requested: the owners and admins are told.",
  "request-approved": "Request approved: the member has the grant.",
  "request-denied": "Request denied: the member is told why.",
  "request-cancelled": "Request cancelled.",
  "client-updated": "Client saved.",
  "client-disabled": "Client disabled: it starts no new sign-ins.",
  "client-enabled": "Client enabled.",
  "client-deleted": "Client deleted.",
  "integration-created": "Integration added.",
  "integration-updated": "Integration saved.",
  "integration-enabled": "Integration enabled.",
  "integration-disabled": "Integration disabled: it receives nothing until you enable it again.",
  "integration-deleted": "Integration deleted.",
  "alert-rule-created": "Alert rule added.",
  "alert-rule-updated": "Alert rule saved.",
  "alert-rule-paused": "Alert rule paused: it matches nothing until you resume it.",
  "alert-rule-resumed": "Alert rule resumed.",
  "alert-rule-deleted": "Alert rule deleted.",
  "assistant-saved": "Assistant settings saved.",
  "assistant-stopped": "Emergency stop on: the assistant answers nothing and acts on nothing until it is released.",
  "assistant-released": "Emergency stop released.",
  "note-created": "Note created.",
  "note-saved": "Note saved.",
  "note-deleted": "Note deleted.",
  "key-revoked": "API key revoked. It stops working at once.",
  "consent-revoked": "Consent revoked. The app will ask again next time.",
  "verification-sent": "A new link is on its way to your address. It works once, for 24 hours.",
  "password-changed": "Password changed. Every other session of yours is signed out; your API keys keep working.",
  "session-revoked": "Session revoked: that browser is signed out.",
  "event-acknowledged": "Event acknowledged.",
  "sessions-revoked": "Every other session is revoked: those browsers are signed out.",
  "preferences-saved": "Notification preferences saved.",
  "push-removed": "That browser gets no more push notifications.",
  "file-saved": "File saved.",
  "file-uploaded": "Uploaded.",
  "folder-created": "Folder created.",
  "file-moved": "Moved.",
  "file-deleted": "Deleted.",
  "version-restored": "Version restored: the one it replaced is kept in the history.",
  "plugin-enabled": "Plugin enabled: the server loads it at its next restart.",
  "plugin-disabled": "Plugin disabled: the server stops loading it at its next restart.",
};

export type Section = "overview" | "servers" | "knowledge" | "clients" | "integrations" | "alerts" | "assistant" | "members" | "access" | "activity";

export interface PageOptions {
  title: string;
  /** Shown under the heading. */
  lede?: Html | string;
  body: Html;
  org?: Organization;
  section?: Section;
  /** The top navigation item that is current. */
  area?: "organizations" | "security" | "admin" | "notifications";
  notice?: string;
  /** Breadcrumb links before the heading. */
  crumbs?: ReadonlyArray<{ href: string; label: string }>;
  /** Scripts of this page besides dashboard.js (assets, e.g. "console.js"). */
  scripts?: readonly string[];
  /** Stylesheets of this page besides dashboard.css (assets). */
  styles?: readonly string[];
  /** ES modules of this page (assets, e.g. "editor.js"), with the import map that resolves their imports. */
  modules?: { files: readonly string[]; importMap: Html };
  /** The page's Content-Security-Policy, when not the dashboard's (one that allows its import map). */
  policy?: string;
}

function orgSwitcher(shell: Shell, org: Organization | undefined): Html {
  if (!shell.organizations.length) return html``;
  const current = org ?? shell.organizations.find((o) => o.slug === shell.lastOrg);
  return html`<form class="org-switch" method="get" action="/app/switch">
<label for="org-switch">Organization</label>
<select id="org-switch" name="org">
${current ? "" : html`<option value="" selected>Choose…</option>`}
${shell.organizations.map((o) => html`<option value="${o.slug}"${current?.slug === o.slug ? html` selected` : ""}>${o.name}</option>`)}
</select>
<button type="submit" class="btn small">Switch</button>
</form>`;
}

function orgTabs(org: Organization, section: Section | undefined): Html {
  const base = `/app/o/${encodeURIComponent(org.slug)}`;
  const tabs: Array<[Section, string, string]> = [
    ["overview", "Overview", base],
    ["servers", "Servers", `${base}/servers`],
    ["knowledge", "Knowledge", `${base}/knowledge`],
    ...(canManage(org.role)
      ? ([
          ["clients", "Game OAuth", `${base}/clients`],
          ["integrations", "Integrations", `${base}/integrations`],
          ["alerts", "Alerts", `${base}/alerts`],
          ["assistant", "Assistant", `${base}/assistant`],
          ["members", "Members", `${base}/members`],
          ["access", "Access", `${base}/access`],
          ["activity", "Activity", `${base}/activity`],
        ] as Array<[Section, string, string]>)
      : ([
          ["assistant", "Assistant", `${base}/assistant`],
          ["members", "Members", `${base}/members`],
          ["access", "Access", `${base}/access`],
        ] as Array<[Section, string, string]>)),
  ];
  return html`<nav class="tabs" aria-label="${org.name}">
<ul>${tabs.map(([key, label, href]) => html`<li><a href="${href}"${key === section ? html` aria-current="page"` : ""}>${label}</a></li>`)}</ul>
</nav>`;
}

/** The notifications link with its unread count (a badge, and words for screen readers), kept live by dashboard.js (data-bell-events). */
function bell(unread: number, current: Html | string): Html {
  return html`<a href="/app/notifications" class="bell" data-bell-events="/app/notifications/events"${current}>Notifications<span class="badge count" data-unread aria-hidden="true"${unread ? "" : html` hidden`}>${unread}</span><span class="sr-only" data-unread-words>${unread ? `, ${unread} unread` : ""}</span></a>`;
}

/** The top bar's account links; absent on pages shown before the person is known. */
function accountNav(shell: Shell, area: PageOptions["area"]): Html {
  const current = (name: PageOptions["area"]) => (area === name ? html` aria-current="page"` : "");
  return html`<nav class="account-nav" aria-label="Account">
<ul>
<li><a href="/app/organizations"${current("organizations")}>Organizations</a></li>
<li><a href="/app/account/security"${current("security")}>Security</a></li>
<li>${bell(shell.unread, current("notifications"))}</li>
${shell.user.platformAdmin ? html`<li><a href="/app/admin"${current("admin")}>Admin</a></li>` : ""}
<li>${postForm("/sign-out", shell.formToken, html`<button type="submit" class="linklike">Sign out</button>`, html` class="inline"`)}</li>
</ul>
</nav>`;
}

/** A whole page. `shell` is absent on pages shown before the person is known (errors). */
export function layout(shell: Shell | undefined, o: PageOptions): Html {
  const notice = o.notice && notices[o.notice];
  return page({
    title: `${o.title}${o.org ? ` · ${o.org.name}` : ""} · Outpost`,
    icon: { href: assets.href("favicon.svg"), type: "image/svg+xml" },
    manifest: { href: manifestPath, themeColor },
    stylesheets: [...(o.styles ?? []), "dashboard.css"].map((file) => assets.href(file)),
    scripts: ["dashboard.js", ...(o.scripts ?? [])].map((file) => assets.href(file)),
    modules: o.modules?.files.map((file) => assets.href(file)),
    importMap: o.modules?.importMap,
    body: html`<a class="skip-link" href="#main">Skip to content</a>
<header class="topbar">
<div class="topbar-inner">
<a class="brand" href="/app"><span class="logo" aria-hidden="true"></span>Outpost</a>
${shell ? orgSwitcher(shell, o.org) : ""}
${shell ? accountNav(shell, o.area) : ""}
</div>
${o.org ? orgTabs(o.org, o.section) : ""}
</header>
<main id="main" tabindex="-1">
${o.crumbs?.length ? html`<nav class="crumbs" aria-label="Breadcrumb"><ol>${o.crumbs.map((c) => html`<li><a href="${c.href}">${c.label}</a></li>`)}</ol></nav>` : ""}
${notice ? html`<div class="notice" role="status">${notice}</div>` : ""}
<h1>${o.title}</h1>
${o.lede ? html`<p class="lede">${o.lede}</p>` : ""}
${o.body}
</main>
<footer class="footer"><p>${shell ? html`Signed in as <strong>${shell.user.email}</strong>` : "Outpost"}</p></footer>
<div id="announcer" class="sr-only" aria-live="polite"></div>`,
  });
}

/** A secret shown once: read-only, with a copy button and the warning. */
export function secretBlock(id: string, label: string, value: string, warning: string): Html {
  return html`<div class="secret">
<label for="${id}">${label}</label>
<div class="copy-row"><input id="${id}" class="mono" type="text" readonly value="${value}" aria-describedby="${id}-warning"><button type="button" class="btn" data-copy="${id}">Copy</button></div>
<p class="warning" id="${id}-warning"><strong>Copy it now.</strong> ${warning}</p>
</div>`;
}

/** A value to copy that is not secret (ids, URLs, commands). */
export function copyValue(id: string, label: string, value: string): Html {
  return html`<div class="copy-field">
<label for="${id}">${label}</label>
<div class="copy-row"><input id="${id}" class="mono" type="text" readonly value="${value}"><button type="button" class="btn" data-copy="${id}">Copy</button></div>
</div>`;
}

export function roleBadge(role: Role): Html {
  const name = role === Role.OWNER ? "Owner" : role === Role.ADMIN ? "Admin" : "Member";
  return html`<span class="badge role-${name.toLowerCase()}">${name}</span>`;
}
