/**
 * A tagged template for the dashboard's HTML: every interpolated value is escaped unless it is
 * already {@link Html} (the result of another `html` template), so markup cannot come from data.
 */
import { escapeHtml } from "../pages.ts";

/** A fragment of markup that is safe to embed as is. */
export class Html {
  readonly value: string;
  constructor(value: string) {
    this.value = value;
  }
  toString(): string {
    return this.value;
  }
}

export type HtmlValue = Html | string | number | boolean | null | undefined | readonly HtmlValue[];

function render(value: HtmlValue): string {
  if (value === undefined || value === null || value === false || value === true) return "";
  if (value instanceof Html) return value.value;
  if (Array.isArray(value)) return value.map(render).join("");
  return escapeHtml(String(value));
}

export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): Html {
  let out = strings[0];
  values.forEach((value, i) => {
    out += render(value) + strings[i + 1];
  });
  return new Html(out);
}

/** Markup written by this module's own code (never data). */
export function trusted(markup: string): Html {
  return new Html(markup);
}
