import { Migration0001Initial } from "./0001-initial.ts";

/** Every migration, in order. Append; never edit one that has shipped. */
export const migrations = [{ name: "0001_initial", class: Migration0001Initial }];
