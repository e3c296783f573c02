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

/** The IPv4 address an IPv6 address carries (IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible or NAT64 `64:ff9b::/96`), if any. */
function embeddedIpv4(address: string): string | undefined {
  const lower = address.toLowerCase();
  const dotted = /^(?:::ffff:|::|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (dotted) return dotted[1];
  const hex = /^(?:::ffff:|::|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (!hex) return undefined;
  const high = parseInt(hex[1], 16);
  const low = parseInt(hex[2], 16);
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
}

/** The class of a refused address, or undefined when Outpost may send to it. `address` must be an IP. */
export function classifyAddress(address: string): AddressClass | undefined {
  const family = isIP(address);
  if (family === 0) throw new Error(`not an IP address: ${address}`);
  const bare = family === 6 ? address.replace(/%.*$/, "") : address;
  if (family === 6) {
    const v4 = embeddedIpv4(bare);
    if (v4) return classifyAddress(v4);
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
