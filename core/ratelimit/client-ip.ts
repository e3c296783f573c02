import { isIPv4, isIPv6 } from "node:net";

/**
 * The key an address is counted under: an IPv4 address as it is (also when written IPv4-mapped,
 * `::ffff:1.2.3.4`), an IPv6 address by its /64 network, which one subscriber usually holds whole.
 * Undefined for anything that is not an address.
 */
export function clientIpKey(raw: string | null | undefined): string | undefined {
  const ip = raw?.trim();
  if (!ip) return undefined;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped && isIPv4(mapped[1])) return mapped[1];
  if (isIPv4(ip)) return ip;
  if (!isIPv6(ip) || ip.includes(".")) return isIPv6(ip) ? ip.toLowerCase() : undefined;
  const [head, tail] = ip.toLowerCase().split("::");
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const groups = tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill("0"), ...right];
  return (
    groups
      .slice(0, 4)
      .map((g) => g.padStart(4, "0"))
      .join(":") + "::/64"
  );
}
