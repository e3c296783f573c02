import { Migration0001Initial } from "./0001-initial.ts";
import { Migration0002RateLimits } from "./0002-rate-limits.ts";

/** Every migration, in order. Append; never edit one that has shipped. */
export const migrations = [
  { name: "0001_initial", class: Migration0001Initial },
  { name: "0002_rate_limits", class: Migration0002RateLimits },
];
