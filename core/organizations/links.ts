/** Where in the dashboard a notification about an organization leads: its page, or `rest` below it (e.g. "/access"). */
export const orgLink = (slug: string, rest = "") => `/app/o/${encodeURIComponent(slug)}${rest}`;
