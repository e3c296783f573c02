/** Form controls with their labels, hints and the API's messages next to them. */
import { formTokenInput } from "../form-token.ts";
import { html, type Html } from "../html.ts";
import type { FormErrors } from "./core.ts";
import { signingAlgs, type SigningAlg } from "../../contract/issuers.ts";

export interface FieldOptions {
  /** The input's name (and the API field whose messages it shows, unless `apiField`). */
  name: string;
  label: string;
  value?: string;
  type?: "text" | "email" | "password" | "url";
  hint?: string;
  required?: boolean;
  autocomplete?: string;
  errors?: FormErrors;
  apiField?: string;
  maxlength?: number;
  /** Extra `data-*` hooks for the page script. */
  data?: Record<string, string>;
  id?: string;
}

function messages(options: { name: string; errors?: FormErrors; apiField?: string }): string[] {
  return options.errors?.fields[options.apiField ?? options.name] ?? [];
}

/** The hint and error paragraphs of a control, and the ids to put in its aria-describedby. */
function describe(id: string, hint: string | undefined, errors: string[]): { ids: string; markup: Html } {
  const ids = [hint ? `${id}-hint` : "", errors.length ? `${id}-error` : ""].filter(Boolean).join(" ");
  return {
    ids,
    markup: html`${hint ? html`<p class="hint" id="${id}-hint">${hint}</p>` : ""}${
      errors.length ? html`<p class="field-error" id="${id}-error">${errors.map((e, i) => html`${i ? html`<br>` : ""}${e}`)}</p>` : ""
    }`,
  };
}

function dataAttributes(data: Record<string, string> | undefined): Html {
  return html`${Object.entries(data ?? {}).map(([k, v]) => html` data-${k}="${v}"`)}`;
}

export function textField(o: FieldOptions): Html {
  const id = o.id ?? `f-${o.name}`;
  const errors = messages(o);
  const d = describe(id, o.hint, errors);
  return html`<div class="field${errors.length ? " invalid" : ""}">
<label for="${id}">${o.label}</label>
<input id="${id}" name="${o.name}" type="${o.type ?? "text"}" value="${o.value ?? ""}"${o.required ? html` required` : ""}${
    o.autocomplete ? html` autocomplete="${o.autocomplete}"` : ""
  }${o.maxlength ? html` maxlength="${o.maxlength}"` : ""}${d.ids ? html` aria-describedby="${d.ids}"` : ""}${
    errors.length ? html` aria-invalid="true"` : ""
  }${dataAttributes(o.data)}>
${d.markup}</div>`;
}

export function textArea(o: FieldOptions & { rows?: number }): Html {
  const id = o.id ?? `f-${o.name}`;
  const errors = messages(o);
  const d = describe(id, o.hint, errors);
  return html`<div class="field${errors.length ? " invalid" : ""}">
<label for="${id}">${o.label}</label>
<textarea id="${id}" name="${o.name}" rows="${o.rows ?? 3}" spellcheck="false"${o.required ? html` required` : ""}${
    d.ids ? html` aria-describedby="${d.ids}"` : ""
  }${errors.length ? html` aria-invalid="true"` : ""}>${o.value ?? ""}</textarea>
${d.markup}</div>`;
}

export function selectField(o: FieldOptions & { options: ReadonlyArray<{ value: string; label: string }> }): Html {
  const id = o.id ?? `f-${o.name}`;
  const errors = messages(o);
  const d = describe(id, o.hint, errors);
  return html`<div class="field${errors.length ? " invalid" : ""}">
<label for="${id}">${o.label}</label>
<select id="${id}" name="${o.name}"${d.ids ? html` aria-describedby="${d.ids}"` : ""}${errors.length ? html` aria-invalid="true"` : ""}>
${o.options.map((opt) => html`<option value="${opt.value}"${opt.value === o.value ? html` selected` : ""}>${opt.label}</option>`)}
</select>
${d.markup}</div>`;
}

/** A group of radio buttons or checkboxes in a fieldset with a legend. */
export function choiceGroup(o: {
  name: string;
  legend: string;
  type: "radio" | "checkbox";
  options: ReadonlyArray<{ value: string; label: string; hint?: string }>;
  checked: ReadonlySet<string>;
  errors?: FormErrors;
  apiField?: string;
  hint?: string;
  id?: string;
}): Html {
  const id = o.id ?? `f-${o.name}`;
  const errors = messages(o);
  const d = describe(id, o.hint, errors);
  return html`<fieldset class="field choices${errors.length ? " invalid" : ""}" id="${id}"${d.ids ? html` aria-describedby="${d.ids}"` : ""}>
<legend>${o.legend}</legend>
${d.markup}
${o.options.map(
  (opt, i) =>
    html`<div class="choice"><input type="${o.type}" id="${id}-${i}" name="${o.name}" value="${opt.value}"${
      o.checked.has(opt.value) ? html` checked` : ""
    }${opt.hint ? html` aria-describedby="${id}-${i}-hint"` : ""}> <label for="${id}-${i}">${opt.label}</label>${
      opt.hint ? html`<p class="hint" id="${id}-${i}-hint">${opt.hint}</p>` : ""
    }</div>`,
)}
</fieldset>`;
}

/** The messages that belong to no field, at the top of a form. */
export function formAlert(errors: FormErrors | undefined, knownFields: readonly string[] = []): Html {
  if (!errors) return html``;
  const stray = [
    ...errors.form,
    ...Object.entries(errors.fields)
      .filter(([f]) => !knownFields.includes(f))
      .flatMap(([, m]) => m),
  ];
  const count = Object.entries(errors.fields).filter(([f]) => knownFields.includes(f)).length;
  return html`<div class="alert" role="alert">
<p><strong>${count || stray.length ? "Please check the form." : ""}</strong></p>
${stray.length ? html`<ul>${stray.map((m) => html`<li>${m}</li>`)}</ul>` : ""}
</div>`;
}

/** `<form method="post">` with the anti-forgery token. */
export function postForm(action: string, token: string, body: Html, attrs: Html = html``): Html {
  return html`<form method="post" action="${action}"${attrs}>
${formTokenInput(token)}
${body}
</form>`;
}

/**
 * A destructive action: a POST form that the page script turns into a confirmation dialog; with
 * no script the server answers the unconfirmed POST with a confirmation page instead.
 */
export function dangerForm(o: {
  action: string;
  token: string;
  label: string;
  /** The question, e.g. `Delete the server "Survival"?`. */
  confirm: string;
  /** What follows, in a sentence. */
  consequence: string;
  fields?: Record<string, string>;
  buttonClass?: string;
  /** An accessible name when the visible label is ambiguous in a list ("Revoke" → "Revoke key laptop"). */
  ariaLabel?: string;
}): Html {
  return postForm(
    o.action,
    o.token,
    html`${Object.entries(o.fields ?? {}).map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}">`)}
<button type="submit" class="btn ${o.buttonClass ?? "danger"}"${o.ariaLabel ? html` aria-label="${o.ariaLabel}"` : ""}>${o.label}</button>`,
    html` class="inline" data-confirm="${o.confirm}" data-consequence="${o.consequence}" data-confirm-label="${o.label}"`,
  );
}

const signingAlgLabels: Record<SigningAlg, string> = {
  RS256: "RS256 (RSA): every OpenID Connect library checks it",
  ES256: "ES256 (ECDSA P-256): shorter tokens",
  EdDSA: "EdDSA (Ed25519): shorter tokens, fastest to check",
};

/** How an OAuth client's ID tokens are signed: the same choice on both issuers' client forms. */
export function idTokenAlgField(value: string, errors?: FormErrors): Html {
  return selectField({
    name: "idTokenSignedResponseAlg",
    label: "ID token signing algorithm",
    value,
    options: signingAlgs.map((alg) => ({ value: alg, label: signingAlgLabels[alg] })),
    hint: "Your app's library must expect the same (id_token_signed_response_alg).",
    errors,
  });
}
