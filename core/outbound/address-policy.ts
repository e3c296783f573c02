/**
 * Which IP addresses Outpost may send to. Outbound deliveries (webhooks, Discord, web push) go
 * to addresses that organizations choose, so an address inside the deployment's own network
 * (private ranges, loopback, link-local and cloud metadata, CGNAT, unique-local IPv6, multicast,
 * reserved and documentation ranges) is refused: otherwise a webhook could read or poke services
 * that only the deployment can reach (SSRF). Loopback alone is allowed for local development.
 */
import { BlockList, isIP } from "node:net";

/** Why an address is refused, for the outcome's message. */
export type AddressClass = "loopback" | "private" | "link-local" | "shared (CGNAT)" | "unique-local" | "multicast" | "reserved" | "unspecified";

const ranges: ReadonlyArray<readonly [string, number, "ipv4" | "ipv6", AddressClass]> = [
  ["0.0.0.0", 8, "ipv4", "unspecified"],
  ["10.0.0.0", 8, "ipv4", "private"],
  ["100.64.0.0", 10, "ipv4", "shared (CGNAT)"],
  ["127.0.0.0", 8, "ipv4", "loopback"],
  // Includes 169.254.169.254, the cloud metadata service.
  ["169.254.0.0", 16, "ipv4", "link-local"],
  ["172.16.0.0", 12, "ipv4", "private"],
  ["192.0.0.0", 24, "ipv4", "reserved"],
  ["192.0.2.0", 24, "ipv4", "reserved"],
  ["192.88.99.0", 24, "ipv4", "reserved"],
  ["192.168.0.0", 16, "ipv4", "private"],
  ["198.18.0.0", 15, "ipv4", "reserved"],
  ["198.51.100.0", 24, "ipv4", "reserved"],
  ["203.0.113.0", 24, "ipv4", "reserved"],
  ["224.0.0.0", 4, "ipv4", "multicast"],
  ["240.0.0.0", 4, "ipv4", "reserved"],
  ["::", 128, "ipv6", "unspecified"],
  ["::1", 128, "ipv6", "loopback"],
  ["64:ff9b:1::", 48, "ipv6", "reserved"],
  ["100::", 64, "ipv6", "reserved"],
  // IETF protocol assignments, including Teredo (2001::/32), which tunnels to an IPv4 address.
  ["2001::", 23, "ipv6", "reserved"],
  ["2001:db8::", 32, "ipv6", "reserved"],
  // 6to4 embeds an IPv4 address that may be private.
  ["2002::", 16, "ipv6", "reserved"],
  // Includes fd00:ec2::254, a cloud metadata service.
  ["fc00::", 7, "ipv6", "unique-local"],
  ["fe80::", 10, "ipv6", "link-local"],
  ["fec0::", 10, "ipv6", "reserved"],
  ["ff00::", 8, "ipv6", "multicast"],
];

const lists = new Map<AddressClass, BlockList>();
for (const [network, prefix, type, kind] of ranges) {
  let list = lists.get(kind);
  if (!list) lists.set(kind, (list = new BlockList()));
  list.addSubnet(network, prefix, type);
}

/** The eight 16-bit groups of an IPv6 address in any of its spellings (`isIP` said it is one; no zone). */
function ipv6Groups(address: string): number[] {
  let text = address.toLowerCase();
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number);
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const groups = (part: string) => (part ? part.split(":").map((group) => parseInt(group, 16)) : []);
  const gap = text.indexOf("::");
  if (gap < 0) return groups(text);
  const [head, tail] = [groups(text.slice(0, gap)), groups(text.slice(gap + 2))];
  return [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
}

const ipv4Of = (high: number, low: number) => `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;

/**
 * The IPv4 addresses an IPv6 address carries, and whether it reaches them as itself:
 * - IPv4-mapped `::ffff:0:0/96` and NAT64's well-known `64:ff9b::/96`: the packets go to the
 *   IPv4 address, so the address is classed as that one (a public one may be sent to);
 * - IPv4-translated `::ffff:0:0:0/96` (SIIT) and IPv4-compatible `::/96` (deprecated, except `::`
 *   and `::1`), 6to4 `2002::/16` (the IPv4 address in bits 16–47) and Teredo `2001::/32` (the
 *   server in bits 32–63, the client inverted in bits 96–127): classed as the IPv4 address when
 *   that one is refused (a loopback one as reserved: they do not reach this machine), and refused
 *   as reserved in any case, since no one on the Internet answers at them (NAT64's local-use
 *   `64:ff9b:1::/48`, whose layout its operator chooses, is reserved whole).
 */
function embeddedIpv4(g: readonly number[]): { addresses: string[]; reachedAsIs: boolean } | undefined {
  const zero = (from: number, to: number) => g.slice(from, to).every((group) => group === 0);
  if (zero(0, 5) && g[5] === 0xffff) return { addresses: [ipv4Of(g[6], g[7])], reachedAsIs: true };
  if (g[0] === 0x64 && g[1] === 0xff9b && zero(2, 6)) return { addresses: [ipv4Of(g[6], g[7])], reachedAsIs: true };
  if (zero(0, 4) && g[4] === 0xffff && g[5] === 0) return { addresses: [ipv4Of(g[6], g[7])], reachedAsIs: false };
  if (zero(0, 6) && !(g[6] === 0 && g[7] <= 1)) return { addresses: [ipv4Of(g[6], g[7])], reachedAsIs: false };
  if (g[0] === 0x2002) return { addresses: [ipv4Of(g[1], g[2])], reachedAsIs: false };
  if (g[0] === 0x2001 && g[1] === 0) return { addresses: [ipv4Of(g[2], g[3]), ipv4Of(~g[6] & 0xffff, ~g[7] & 0xffff)], reachedAsIs: false };
  return undefined;
}

/** The class of a refused address, or undefined when Outpost may send to it. `address` must be an IP. */
export function classifyAddress(address: string): AddressClass | undefined {
  const family = isIP(address);
  if (family === 0) throw new Error(`not an IP address: ${address}`);
  const bare = family === 6 ? address.replace(/%.*$/, "") : address;
  if (family === 6) {
    const embedded = embeddedIpv4(ipv6Groups(bare));
    if (embedded) {
      for (const ipv4 of embedded.addresses) {
        const kind = classifyAddress(ipv4);
        // Only an address reached as itself is loopback (which local development may send to).
        if (kind) return kind === "loopback" && !embedded.reachedAsIs ? "reserved" : kind;
      }
      return embedded.reachedAsIs ? undefined : "reserved";
    }
  }
  const type = family === 4 ? "ipv4" : "ipv6";
  for (const [kind, list] of lists) if (list.check(bare, type)) return kind;
  return undefined;
}

/** Why Outpost refuses to send to `address`, or undefined when it may; loopback passes when `allowLoopback`. */
export function addressRefusal(address: string, allowLoopback: boolean): string | undefined {
  const kind = classifyAddress(address);
  if (!kind || (kind === "loopback" && allowLoopback)) return undefined;
  return `${address} is a ${kind} address, which Outpost does not send to`;
}
