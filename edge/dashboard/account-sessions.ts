/** Account → Security: the password form and the list of the person's signed-in sessions. */
import type { Session } from "../../gen/outpost/auth/v1/resources_pb.js";
import type { FormErrors } from "./core.ts";
import { when } from "./format.ts";
import { dangerForm, formAlert, postForm, textField } from "./forms.ts";
import { html, type Html } from "../html.ts";

export const securityPath = "/app/account/security";

/** "Firefox on Linux" from a user agent, or a plain fallback: enough to recognise a device. */
export function deviceName(userAgent: string): string {
  if (!userAgent) return "Unknown device";
  const browser =
    [
      ["Edg/", "Edge"],
      ["OPR/", "Opera"],
      ["Firefox/", "Firefox"],
      ["Chrome/", "Chrome"],
      ["Chromium/", "Chromium"],
      ["Safari/", "Safari"],
      ["curl/", "curl"],
    ].find(([token]) => userAgent.includes(token))?.[1] ?? "A browser";
  const os = [
    ["Android", "Android"],
    ["iPhone", "iOS"],
    ["iPad", "iPadOS"],
    ["Windows", "Windows"],
    ["Mac OS X", "macOS"],
    ["CrOS", "ChromeOS"],
    ["Linux", "Linux"],
  ].find(([token]) => userAgent.includes(token))?.[1];
  return os ? `${browser} on ${os}` : browser;
}

export function passwordSection(token: string, errors?: FormErrors): Html {
  return html`<section aria-labelledby="password-heading">
<h2 id="password-heading">Password</h2>
${postForm(
  `${securityPath}/password`,
  token,
  html`${formAlert(errors, ["currentPassword", "newPassword"])}
${textField({ name: "currentPassword", label: "Current password", type: "password", required: true, autocomplete: "current-password", maxlength: 256, errors })}
${textField({ name: "newPassword", label: "New password", type: "password", required: true, autocomplete: "new-password", maxlength: 256, hint: "At least 10 characters. Every other session of yours is signed out; your API keys keep working.", errors })}
<div class="actions"><button type="submit" class="btn primary">Change password</button></div>`,
  html` class="panel stack" aria-labelledby="password-heading"`,
)}
</section>`;
}

export function sessionsSection(token: string, sessions: readonly Session[]): Html {
  const rows = sessions.map((s) => {
    const device = deviceName(s.userAgent);
    const action = s.current
      ? html`<span class="badge">This browser</span>`
      : dangerForm({
          action: `${securityPath}/sessions/${s.id}/revoke`,
          token,
          label: "Revoke",
          ariaLabel: `Revoke session ${device}${s.ip ? ` at ${s.ip}` : ""}`,
          confirm: `Revoke the session of ${device}?`,
          consequence: "That browser is signed out at once and has to sign in again.",
          buttonClass: "danger small",
        });
    return html`<tr><td>${device}</td><td class="mono">${s.ip || html`<span class="muted">Unknown</span>`}</td><td>${when(s.createdAt)}</td><td>${when(s.lastUsedAt)}</td><td class="row-actions">${action}</td></tr>`;
  });
  const others = sessions.filter((s) => !s.current).length;
  return html`<section aria-labelledby="sessions-heading">
<h2 id="sessions-heading">Sessions</h2>
<p>Where you are signed in. A session that goes unused for a while ends by itself; revoke one you do not recognise, then change your password.</p>
<div class="table-wrap" role="region" tabindex="0" aria-label="Your sessions"><table><caption class="sr-only">Your sessions</caption><thead><tr><th scope="col">Device</th><th scope="col">IP address</th><th scope="col">Signed in</th><th scope="col">Last used</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead><tbody>${rows}</tbody></table></div>
${
  others
    ? html`<div class="actions">${dangerForm({
        action: `${securityPath}/sessions/revoke-others`,
        token,
        label: "Revoke all other sessions",
        confirm: "Revoke every other session?",
        consequence: `${others} other session${others === 1 ? " is" : "s are"} signed out at once. This browser stays signed in.`,
      })}</div>`
    : ""
}
</section>`;
}
