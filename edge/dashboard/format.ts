/** How the dashboard words enums and writes dates. */
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { Role, VerifierPolicy } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import { html, type Html } from "../html.ts";

/** A short UTC date and time: "2026-11-26 12:05 UTC". */
export function utcText(date: Date): string {
  const iso = date.toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
}

/** `<time>` with a short UTC date and time, or `empty` when there is no timestamp. */
export function when(ts: Timestamp | undefined, empty = "—"): Html {
  if (!ts) return html`<span class="muted">${empty}</span>`;
  const date = timestampDate(ts);
  return html`<time datetime="${date.toISOString()}">${utcText(date)}</time>`;
}

export function roleName(role: Role): string {
  return role === Role.OWNER ? "Owner" : role === Role.ADMIN ? "Admin" : role === Role.MEMBER ? "Member" : "Unknown";
}

export function gameName(game: Game): string {
  return game === Game.MINECRAFT ? "Minecraft" : game === Game.HYTALE ? "Hytale" : "Unknown game";
}

/** The `--game` value of outpost-agent for a game. */
export function gameFlag(game: Game): string {
  return game === Game.HYTALE ? "hytale" : "minecraft";
}

export function policyName(policy: VerifierPolicy): string {
  return policy === VerifierPolicy.SELECTED_SERVERS ? "Selected servers" : "Any server of the organization";
}

export function canManage(role: Role): boolean {
  return role === Role.OWNER || role === Role.ADMIN;
}

/** A URL slug suggested from a display name: "My Cool Org!" → "my-cool-org". */
export function suggestSlug(name: string): string {
  const slug = name
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/['\u2019]/g, "")
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 40)
    .replace(/-+$/, "");
  return slug;
}

/** A size in bytes as people read it: "512 bytes", "1.5 KiB", "20 MiB". */
export function byteSize(size: bigint | number): string {
  const n = Number(size);
  if (n < 1024) return n === 1 ? "1 byte" : `${n} bytes`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let value = n / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value < 10 ? value.toFixed(1).replace(/\.0$/, "") : Math.round(value)} ${units[unit]}`;
}
