/**
 * Outpost's own account pages on ACCOUNT_BASE_URL: sign-in, sign-up, sign-out and Account
 * OAuth's consent and error pages. Server-rendered forms that work without JavaScript, each with
 * the anti-forgery token (edge/form-token.ts), under the strict CSP of edge/pages.ts.
 */
import { AssetSet, page } from "../pages.ts";
import { html, type Html } from "../html.ts";
import { formTokenInput } from "../form-token.ts";

export const accountAssets = new AssetSet("/account-assets/", new URL("./assets/", import.meta.url), ["account.css"]);

/** The account pages: the brand above one card. */
function layout(title: string, body: Html): Html {
  return page({
    title: `${title} · Outpost`,
    stylesheets: [accountAssets.href("account.css")],
    body: html`<header class="brand">Outpost</header>
<main class="card">
${body}
</main>`,
  });
}

const returnInput = (returnTo: string) => returnTo && html`<input type="hidden" name="return_to" value="${returnTo}">`;
const returnQuery = (returnTo: string) => (returnTo ? `?return_to=${encodeURIComponent(returnTo)}` : "");

function problem(message: string | undefined): Html | undefined {
  return message ? html`<p class="problem" role="alert" id="form-problem">${message}</p>` : undefined;
}

interface FieldOptions {
  name: string;
  label: string;
  type: "email" | "password" | "text";
  value?: string;
  autocomplete: string;
  error?: string;
  hint?: string;
  maxLength: number;
  minLength?: number;
  /** Defaults to true. */
  required?: boolean;
}

function field(f: FieldOptions): Html {
  const described = [f.hint && `${f.name}-hint`, f.error && `${f.name}-error`].filter(Boolean).join(" ");
  return html`<div class="field">
<label for="${f.name}">${f.label}</label>
<input id="${f.name}" name="${f.name}" type="${f.type}" autocomplete="${f.autocomplete}"${f.required !== false && html` required`} maxlength="${f.maxLength}"${
    f.minLength ? html` minlength="${f.minLength}"` : ""
  }${f.value && html` value="${f.value}"`}${described && html` aria-describedby="${described}"`}${f.error && html` aria-invalid="true"`}>
${f.hint && html`<p class="hint" id="${f.name}-hint">${f.hint}</p>`}${f.error && html`<p class="field-error" id="${f.name}-error">${f.error}</p>`}
</div>`;
}

export interface SignInPageData {
  formToken: string;
  returnTo: string;
  email?: string;
  error?: string;
  /** Why the app sends the user here again (prompt=login, max_age). */
  notice?: string;
}

export function signInPage(data: SignInPageData): Html {
  return layout(
    "Sign in",
    html`<h1>Sign in</h1>
${data.notice && html`<p class="notice">${data.notice}</p>`}${problem(data.error)}
<form method="post" action="/sign-in" novalidate>
${formTokenInput(data.formToken)}${returnInput(data.returnTo)}
${field({ name: "email", label: "Email", type: "email", value: data.email, autocomplete: "username", maxLength: 254 })}
${field({ name: "password", label: "Password", type: "password", autocomplete: "current-password", maxLength: 256 })}
<div class="actions"><button type="submit">Sign in</button></div>
</form>
<p class="switch">No account yet? <a href="/sign-up${returnQuery(data.returnTo)}">Create one</a>.</p>`,
  );
}

export interface SignUpPageData {
  formToken: string;
  returnTo: string;
  name?: string;
  email?: string;
  error?: string;
  fieldErrors?: Partial<Record<"name" | "email" | "password", string>>;
}

export function signUpPage(data: SignUpPageData): Html {
  const errors = data.fieldErrors ?? {};
  return layout(
    "Create an account",
    html`<h1>Create your Outpost account</h1>
${problem(data.error)}
<form method="post" action="/sign-up" novalidate>
${formTokenInput(data.formToken)}${returnInput(data.returnTo)}
${field({ name: "name", label: "Name", type: "text", value: data.name, autocomplete: "name", maxLength: 80, error: errors.name, required: false, hint: "Optional: shown to apps you allow to read your profile." })}
${field({ name: "email", label: "Email", type: "email", value: data.email, autocomplete: "email", maxLength: 254, error: errors.email })}
${field({ name: "password", label: "Password", type: "password", autocomplete: "new-password", maxLength: 256, minLength: 10, error: errors.password, hint: "At least 10 characters." })}
<div class="actions"><button type="submit">Create account</button></div>
</form>
<p class="switch">Already have an account? <a href="/sign-in${returnQuery(data.returnTo)}">Sign in</a>.</p>`,
  );
}

export function signOutPage(formToken: string, email: string | undefined): Html {
  return layout(
    "Sign out",
    html`<h1>Sign out</h1>
<p>${email ? html`You are signed in as <strong>${email}</strong>.` : "You are not signed in."}</p>
<form method="post" action="/sign-out">
${formTokenInput(formToken)}
<div class="actions"><button type="submit">Sign out</button></div>
</form>`,
  );
}

/**
 * RP-initiated logout without an id_token_hint: the signed-in user is asked. The form posts the
 * request's own parameters back to the end-session endpoint with `confirm`, so the app's
 * post_logout_redirect_uri and state survive the question.
 */
export function endSessionConfirmPage(formToken: string, action: string, params: Record<string, string>): Html {
  const kept = ["client_id", "post_logout_redirect_uri", "state"].filter((name) => params[name]);
  return layout(
    "Sign out",
    html`<h1>Sign out of Outpost?</h1>
<p>An app asked to sign you out of Outpost in this browser.</p>
<form method="post" action="${action}">
${formTokenInput(formToken)}
${kept.map((name) => html`<input type="hidden" name="${name}" value="${params[name]}">`)}
<input type="hidden" name="confirm" value="yes">
<div class="actions"><button type="submit">Sign out</button></div>
</form>`,
  );
}

const scopeText: Record<string, string> = {
  openid: "Know which Outpost account is yours (an identifier, nothing else)",
  profile: "Your name",
  email: "Your email address",
  offline_access: "Stay connected while you are away (until you remove its access)",
};

export interface ConsentPageData {
  formToken: string;
  requestId: string;
  clientName: string;
  scopes: readonly string[];
  newScopes: readonly string[];
  userEmail: string;
  userName: string;
  /** Where "Not you?" leads: the sign-in page, returning to this request as whoever signs in. */
  switchAccountHref: string;
}

export function consentPage(data: ConsentPageData): Html {
  const app = data.clientName;
  // "new" marks what this app did not have before, when it had something before.
  const marked = data.newScopes.length < data.scopes.length;
  const items = data.scopes.map(
    (s, i) => html`${i > 0 && "\n"}<li>${scopeText[s] ?? s}${marked && data.newScopes.includes(s) && html`<span class="new">new</span>`}</li>`,
  );
  return layout(
    `Allow ${data.clientName}?`,
    html`<h1><span class="app">${app}</span> wants to sign you in</h1>
<p>Signed in as <strong>${data.userName || data.userEmail}</strong>${data.userName && html` <span class="muted">(${data.userEmail})</span>`}. <a href="${data.switchAccountHref}">Not you?</a></p>
<h2 id="scopes-title">${app} will be able to read:</h2>
<ul class="scopes" aria-labelledby="scopes-title">
${items}
</ul>
<p class="muted">You can take this back at any time from your account's security settings.</p>
<form method="post" action="/api/auth/oauth2/consent">
${formTokenInput(data.formToken)}
<input type="hidden" name="request" value="${data.requestId}">
<div class="actions">
<button type="submit" name="decision" value="allow">Allow</button>
<button type="submit" name="decision" value="deny" class="secondary">Deny</button>
</div>
</form>`,
  );
}

/**
 * The page a verification link opens: a button that uses the link. Opening the link changes
 * nothing, so a mail scanner that fetches it does not spend it.
 */
export function verifyEmailPage(formToken: string, token: string): Html {
  return layout(
    "Confirm your email address",
    html`<h1>Confirm your email address</h1>
<p>Confirm that the address this link was mailed to is yours. You can then accept invitations to organizations and receive their email alerts there.</p>
<form method="post" action="/verify-email">
${formTokenInput(formToken)}
<input type="hidden" name="token" value="${token}">
<div class="actions"><button type="submit">Confirm my address</button></div>
</form>`,
  );
}

/** What using a verification link came to: the address verified, or why not. */
export function verifyEmailResultPage(outcome: { email: string } | { problem: string }): Html {
  if ("email" in outcome) {
    return layout(
      "Address confirmed",
      html`<h1>Address confirmed</h1>
<p><strong>${outcome.email}</strong> is verified. Invitations sent to it can now be accepted.</p>
<p><a href="/app">Go to the dashboard</a></p>`,
    );
  }
  return layout(
    "This link did not work",
    html`<h1>This link did not work</h1>
<p class="problem" role="alert" id="form-problem">${outcome.problem}</p>
<p>Signed in, you can send a new link from <a href="/app/account/security#email-heading">your account's Security page</a>.</p>`,
  );
}

/** An authorization request that cannot go back to the app, or a form refused. */
export function accountErrorPage(title: string, error: string, description: string): Html {
  return layout(
    title,
    html`<h1>${title}</h1>
<p class="problem" id="problem"><strong>${error}</strong>: ${description}</p>
<p>You can close this page. If an app sent you here, its developers need to check its client and redirect address, or you can start again from the app.</p>`,
  );
}
