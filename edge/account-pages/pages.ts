/**
 * Outpost's own account pages on ACCOUNT_BASE_URL: sign-in, sign-up, sign-out and Account
 * OAuth's consent and error pages. Server-rendered forms that work without JavaScript, each with
 * the anti-forgery token (edge/form-token.ts), under the strict CSP of edge/pages.ts.
 */
import { AssetSet, escapeHtml } from "../pages.ts";
import { formTokenInput } from "../form-token.ts";

export const accountAssets = new AssetSet("/account-assets/", new URL("./assets/", import.meta.url), ["account.css"]);

function layout(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(title)} · Outpost</title>
<link rel="stylesheet" href="${accountAssets.href("account.css")}">
</head>
<body>
<header class="brand">Outpost</header>
<main class="card">
${body}
</main>
</body>
</html>
`;
}

const returnInput = (returnTo: string) => (returnTo ? `<input type="hidden" name="return_to" value="${escapeHtml(returnTo)}">` : "");
const returnQuery = (returnTo: string) => (returnTo ? `?return_to=${escapeHtml(encodeURIComponent(returnTo))}` : "");

function problem(message: string | undefined): string {
  return message ? `<p class="problem" role="alert" id="form-problem">${escapeHtml(message)}</p>` : "";
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

function field(f: FieldOptions): string {
  const described = [f.hint && `${f.name}-hint`, f.error && `${f.name}-error`].filter(Boolean).join(" ");
  return `<div class="field">
<label for="${f.name}">${escapeHtml(f.label)}</label>
<input id="${f.name}" name="${f.name}" type="${f.type}" autocomplete="${f.autocomplete}"${f.required === false ? "" : " required"} maxlength="${f.maxLength}"${f.minLength ? ` minlength="${f.minLength}"` : ""}${f.value ? ` value="${escapeHtml(f.value)}"` : ""}${described ? ` aria-describedby="${described}"` : ""}${f.error ? ` aria-invalid="true"` : ""}>
${f.hint ? `<p class="hint" id="${f.name}-hint">${escapeHtml(f.hint)}</p>` : ""}${f.error ? `<p class="field-error" id="${f.name}-error">${escapeHtml(f.error)}</p>` : ""}
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

export function signInPage(data: SignInPageData): string {
  return layout(
    "Sign in",
    `<h1>Sign in</h1>
${data.notice ? `<p class="notice">${escapeHtml(data.notice)}</p>` : ""}${problem(data.error)}
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

export function signUpPage(data: SignUpPageData): string {
  const errors = data.fieldErrors ?? {};
  return layout(
    "Create an account",
    `<h1>Create your Outpost account</h1>
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

export function signOutPage(formToken: string, email: string | undefined): string {
  return layout(
    "Sign out",
    `<h1>Sign out</h1>
<p>${email ? `You are signed in as <strong>${escapeHtml(email)}</strong>.` : "You are not signed in."}</p>
<form method="post" action="/sign-out">
${formTokenInput(formToken)}
<div class="actions"><button type="submit">Sign out</button></div>
</form>`,
  );
}

const scopeText: Record<string, string> = {
  openid: "Know which Outpost account is yours (an identifier, nothing else)",
  profile: "Your name",
  email: "Your email address",
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

export function consentPage(data: ConsentPageData): string {
  const app = escapeHtml(data.clientName);
  const items = data.scopes
    .map((s) => `<li>${escapeHtml(scopeText[s] ?? s)}${data.newScopes.includes(s) && data.newScopes.length < data.scopes.length ? `<span class="new">new</span>` : ""}</li>`)
    .join("\n");
  return layout(
    `Allow ${data.clientName}?`,
    `<h1><span class="app">${app}</span> wants to sign you in</h1>
<p>Signed in as <strong>${escapeHtml(data.userName || data.userEmail)}</strong>${data.userName ? ` <span class="muted">(${escapeHtml(data.userEmail)})</span>` : ""}. <a href="${escapeHtml(data.switchAccountHref)}">Not you?</a></p>
<h2 id="scopes-title">${app} will be able to read:</h2>
<ul class="scopes" aria-labelledby="scopes-title">
${items}
</ul>
<p class="muted">You can take this back at any time from your account's security settings.</p>
<form method="post" action="/api/auth/oauth2/consent">
${formTokenInput(data.formToken)}
<input type="hidden" name="request" value="${escapeHtml(data.requestId)}">
<div class="actions">
<button type="submit" name="decision" value="allow">Allow</button>
<button type="submit" name="decision" value="deny" class="secondary">Deny</button>
</div>
</form>`,
  );
}

/** An authorization request that cannot go back to the app, or a form refused. */
export function accountErrorPage(title: string, error: string, description: string): string {
  return layout(
    title,
    `<h1>${escapeHtml(title)}</h1>
<p class="problem" id="problem"><strong>${escapeHtml(error)}</strong>: ${escapeHtml(description)}</p>
<p>You can close this page. If an app sent you here, its developers need to check its client and redirect address, or you can start again from the app.</p>`,
  );
}
