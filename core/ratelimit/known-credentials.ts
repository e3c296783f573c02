/**
 * Hashes of credentials that resolved to a caller in this process lately. An address refused for
 * sending credentials that match nothing (`bad_credential_ip`) is turned away before any lookup,
 * except with a credential in here: a user sharing the address with the flood (one office, one
 * NAT) keeps working, and their credential is still looked up and checked as always.
 */
export class KnownCredentials {
  readonly #hashes = new Set<string>();
  readonly #max: number;

  constructor(max = 10_000) {
    this.#max = max;
  }

  /** Remembers a credential that just resolved (the longest unused go first). */
  add(hash: string): void {
    this.#hashes.delete(hash);
    this.#hashes.add(hash);
    if (this.#hashes.size > this.#max) this.#hashes.delete(this.#hashes.values().next().value!);
  }

  has(hash: string): boolean {
    return this.#hashes.has(hash);
  }
}
