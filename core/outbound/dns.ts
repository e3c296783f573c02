/**
 * How outbound sends resolve a host: through c-ares (`dns.promises.Resolver`), which queries the
 * name servers itself over the network, with a per-try timeout and a bounded number of tries.
 * `dns.lookup` is not used: it runs getaddrinfo on libuv's small thread pool (4 threads by default,
 * shared with fs, crypto and zlib) without any timeout, so a slow or silent resolver would hold
 * those threads and stall unrelated work, and a delivery would wait as long as the system resolver
 * liked. Both A and AAAA are asked; every answer is returned, for the caller to check each one.
 */
import { Resolver as DnsResolver } from "node:dns/promises";
import { isLocalhostName } from "./target-url.ts";

/** A host's addresses, every one of them, for the caller to check; tests may inject their own table. */
export type Resolver = (hostname: string) => Promise<ReadonlyArray<{ address: string; family: number }>>;

export interface DnsOptions {
  /** The name servers ("127.0.0.1:5353"); the system's (/etc/resolv.conf) otherwise. Tests inject a local stand-in. */
  servers?: readonly string[];
  /** The first try's bound (c-ares doubles it for the next); 1.5 s otherwise, so two tries end in about 5 s, inside a send's 10 s. */
  timeoutMs?: number;
  /** Tries per name server; 2 otherwise. */
  tries?: number;
}

/** A resolution that did not end in an answer; its message says why (c-ares' code, or the timeout). */
export class DnsFailure extends Error {}

const codeOf = (reason: unknown) => String((reason as NodeJS.ErrnoException)?.code ?? "no answer");

export function createDnsResolver(options: DnsOptions = {}): Resolver {
  const timeoutMs = options.timeoutMs ?? 1_500;
  const tries = options.tries ?? 2;
  return async (hostname) => {
    // RFC 6761: loopback without asking DNS (c-ares does not read /etc/hosts for queries).
    if (isLocalhostName(hostname))
      return [
        { address: "127.0.0.1", family: 4 },
        { address: "::1", family: 6 },
      ];
    // One channel per lookup, so nothing is shared between sends and nothing outlives this one.
    const resolver = new DnsResolver({ timeout: timeoutMs, tries });
    if (options.servers) resolver.setServers([...options.servers]);
    const [v4, v6] = await Promise.allSettled([resolver.resolve4(hostname), resolver.resolve6(hostname)]);
    const addresses = [
      ...(v4.status === "fulfilled" ? v4.value.map((address) => ({ address, family: 4 })) : []),
      ...(v6.status === "fulfilled" ? v6.value.map((address) => ({ address, family: 6 })) : []),
    ];
    if (addresses.length) return addresses;
    const codes = [v4, v6].flatMap((result) => (result.status === "rejected" ? [codeOf(result.reason)] : []));
    if (codes.includes("ETIMEOUT")) throw new DnsFailure(`the DNS lookup of ${hostname} timed out (no answer from the name servers in ${tries} tries)`);
    const code = codes.find((c) => c !== "ENODATA") ?? codes[0] ?? "ENODATA";
    throw new DnsFailure(`${hostname} could not be resolved (${code})`);
  };
}
