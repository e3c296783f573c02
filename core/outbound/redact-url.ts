/**
 * A delivery URL as Outpost shows it everywhere but in the sealed credentials (the API, the
 * dashboard, activity details, logs): `scheme://host/…` and the path's last 4 characters, the
 * query and fragment dropped. A Discord URL carries its token in the path and many webhook URLs a
 * token in the path or the query, so the URL itself is a credential: enough to recognise it, not
 * to use it. Redacting a redacted URL gives it back unchanged.
 */
export function redactUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return "…";
  }
  let path = url.pathname;
  try {
    path = decodeURIComponent(path);
  } catch {
    // Kept encoded: still only its last characters are shown.
  }
  const tail = path
    .replace(/\/+$/, "")
    .slice(-4)
    .replace(/^[/…]+/, "");
  return `${url.protocol}//${url.host}/${tail ? `…${tail}` : ""}`;
}
