/**
 * Where an organization's pages are: under `/app/o/<slug>`. Every page of the dashboard links to
 * them, so the path lives here, below the pages, rather than in organizations.ts, which imports
 * many of those pages (a ring when they took the path from it).
 */
import type { Organization } from "../../gen/outpost/organizations/v1/resources_pb.js";

/** The path of an organization's page: `rest` (starting with "/") after the organization's own. */
export function orgPath(org: Organization | string, rest = ""): string {
  return `/app/o/${encodeURIComponent(typeof org === "string" ? org : org.slug)}${rest}`;
}
