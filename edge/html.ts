/**
 * Outpost's one way to write HTML: the `html` tagged template. Every interpolated value is escaped
 * for text and for quoted attribute values alike, unless it is an {@link Html} fragment that `html`
 * itself made, so markup can only come from the templates in the code, never from data. Nothing
 * else in the edge escapes HTML by hand.
 */

const htmlEscapes: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/**
 * A fragment of markup that is safe to embed as is. Only `html` makes one: the markup sits in a
 * private field, so an object from elsewhere (parsed JSON, a request field) that merely looks like
 * a fragment is not taken for one.
 */
export class Html {
  readonly #markup: string;

  private constructor(markup: string) {
    this.#markup = markup;
  }

  /** Whether `value` is a fragment `html` made (the private field, not the shape, decides). */
  static is(value: unknown): value is Html {
    return typeof value === "object" && value !== null && #markup in value;
  }

  /** Joins the template's literal parts with the rendered values. */
  static fromTemplate(strings: TemplateStringsArray, values: readonly HtmlValue[]): Html {
    let out = strings[0];
    values.forEach((value, i) => {
      out += render(value) + strings[i + 1];
    });
    return new Html(out);
  }

  toString(): string {
    return this.#markup;
  }

  /**
   * A script element of JSON data: the one fragment not written with `html`, whose escaping would
   * break it (a script element's text is never decoded). Its text is {@link scriptJson}'s, which
   * leaves no `<` in it, and `type` is one of two fixed words.
   */
  static jsonScript(type: "importmap" | "application/json", value: unknown): Html {
    return new Html(`<script type="${type}">${scriptJson(value)}</script>`);
  }
}

/**
 * What a template accepts: fragments as they are; text and numbers escaped; arrays rendered item by
 * item and joined with nothing between; `undefined`, `null`, `false` (and `true`, so that
 * `${cond && html`…`}` works either way) render nothing.
 */
export type HtmlValue = Html | string | number | bigint | boolean | null | undefined | readonly HtmlValue[];

function render(value: HtmlValue): string {
  if (value === undefined || value === null || typeof value === "boolean") return "";
  if (Html.is(value)) return value.toString();
  if (Array.isArray(value)) return value.map(render).join("");
  return String(value).replace(/[&<>"']/g, (c) => htmlEscapes[c]);
}

/**
 * Markup with its values escaped, for text content and for double- or single-quoted attribute
 * values. Attribute names and unquoted attribute values must not come from data: no escaping makes
 * those safe.
 */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): Html {
  return Html.fromTemplate(strings, values);
}

/**
 * JSON as the text of a `<script>` element (an import map): `<`, `>`, `&` and the line separators
 * as JSON escapes, so that no value can end the element or open a comment in it. The text is what
 * the page's CSP hashes: exactly what {@link jsonScript} writes.
 */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** `<script type="…">` holding `value` as {@link scriptJson} writes it: data for a script, never markup. */
export function jsonScript(type: "importmap" | "application/json", value: unknown): Html {
  return Html.jsonScript(type, value);
}
