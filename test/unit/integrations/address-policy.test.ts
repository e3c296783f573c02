/**
 * The outbound sender's address classes (core/outbound/address-policy.ts) as a table: IPv4 ranges,
 * IPv6 ranges, and every IPv6 form that carries an IPv4 address, in any spelling, classed by the
 * address it carries when that one is internal.
 */
import assert from "node:assert/strict";
import { addressRefusal, classifyAddress, type AddressClass } from "../../../core/outbound/address-policy.ts";

const table: Array<[string, AddressClass | undefined, string]> = [
  // IPv4
  ["10.0.0.1", "private", "RFC 1918"],
  ["127.0.0.1", "loopback", ""],
  ["169.254.169.254", "link-local", "cloud metadata"],
  ["100.64.0.1", "shared (CGNAT)", ""],
  ["0.0.0.0", "unspecified", ""],
  ["224.0.0.1", "multicast", ""],
  ["192.0.2.1", "reserved", "documentation"],
  ["8.8.8.8", undefined, "public"],
  // IPv6
  ["::", "unspecified", ""],
  ["::1", "loopback", ""],
  ["0:0:0:0:0:0:0:1", "loopback", "expanded"],
  ["fe80::1", "link-local", ""],
  ["fe80::1%eth0", "link-local", "with a zone"],
  ["fd00:ec2::254", "unique-local", "cloud metadata"],
  ["ff02::1", "multicast", ""],
  ["2606:4700:4700::1111", undefined, "public"],
  // IPv4-mapped ::ffff:0:0/96: the IPv4 address itself
  ["::ffff:127.0.0.1", "loopback", "mapped, dotted"],
  ["::ffff:a00:1", "private", "mapped, hex"],
  ["0:0:0:0:0:ffff:a9fe:a9fe", "link-local", "mapped, expanded"],
  ["::ffff:8.8.8.8", undefined, "mapped, public"],
  // IPv4-translated ::ffff:0:0:0/96 (the finding)
  ["::ffff:0:a00:1", "private", "translated, hex"],
  ["::ffff:0:10.0.0.1", "private", "translated, dotted"],
  ["0:0:0:0:ffff:0:7f00:1", "reserved", "translated loopback, expanded: not this machine"],
  ["::ffff:0:a9fe:a9fe", "link-local", "translated, metadata"],
  ["::ffff:0:808:808", "reserved", "translated, public: reaches no one"],
  // IPv4-compatible ::/96
  ["::7f00:1", "reserved", "compatible loopback: not this machine"],
  ["::10.1.2.3", "private", "compatible, dotted"],
  ["::808:808", "reserved", "compatible, public: deprecated"],
  // NAT64 well-known 64:ff9b::/96: the IPv4 address itself
  ["64:ff9b::a00:1", "private", "NAT64"],
  ["64:ff9b::169.254.169.254", "link-local", "NAT64, dotted"],
  ["64:ff9b::808:808", undefined, "NAT64, public"],
  // NAT64 local-use 64:ff9b:1::/48: reserved whole
  ["64:ff9b:1::808:808", "reserved", "local-use NAT64"],
  ["64:ff9b:1:a00:1::", "reserved", "local-use NAT64, /48 layout"],
  // 6to4 2002::/16
  ["2002:a00:1::1", "private", "6to4"],
  ["2002:7f00:1::", "reserved", "6to4 loopback: not this machine"],
  ["2002:a9fe:a9fe::", "link-local", "6to4"],
  ["2002:808:808::1", "reserved", "6to4, public: a relay, refused"],
  // Teredo 2001::/32: server in bits 32–63, client inverted in bits 96–127
  ["2001:0:a00:1::", "private", "Teredo server"],
  ["2001:0:4136:e378:8000:63bf:f5ff:fffe", "private", "Teredo client 10.0.0.1"],
  ["2001:0:4136:e378:8000:63bf:80ff:fffe", "reserved", "Teredo client 127.0.0.1: not this machine"],
  ["2001:0:4136:e378::f7f7:f7f7", "reserved", "Teredo, public both"],
];

describe("outbound address classes", () => {
  for (const [address, expected, why] of table) {
    it(`${address}${why ? ` (${why})` : ""} → ${expected ?? "may be sent to"}`, () => {
      assert.equal(classifyAddress(address), expected);
    });
  }

  it("lets loopback through for local development only (mapped too), and no other class nor an embedded loopback", () => {
    assert.equal(addressRefusal("::ffff:127.0.0.1", true), undefined);
    assert.match(addressRefusal("::ffff:127.0.0.1", false)!, /is a loopback address/);
    assert.match(addressRefusal("::ffff:0:7f00:1", true)!, /is a reserved address/);
    assert.match(addressRefusal("::ffff:0:a00:1", true)!, /is a private address/);
  });
});
