/**
 * A stand-in DNS server on a loopback UDP port, written from RFC 1035: it answers A and AAAA
 * questions from a table (NOERROR with no answer for a family the table lacks, NXDOMAIN for an
 * unknown name), or, when `silent`, never answers at all — a resolver that hangs.
 */
import { createSocket } from "node:dgram";
import type { AddressInfo } from "node:net";
import { isIPv4, isIPv6 } from "node:net";

export interface DnsStandIn {
  /** "127.0.0.1:<port>", for Resolver.setServers. */
  server: string;
  /** Names asked, with their type ("A", "AAAA"). */
  questions: string[];
  silent: boolean;
  close(): Promise<void>;
}

function ipv6Bytes(address: string): Buffer {
  const [head, tail = ""] = address.split("::");
  const parts = (s: string) => (s ? s.split(":") : []);
  const h = parts(head);
  const t = parts(tail);
  const groups = address.includes("::") ? [...h, ...Array(8 - h.length - t.length).fill("0"), ...t] : h;
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2));
  return out;
}

export async function startDnsStandIn(table: Record<string, string[]>): Promise<DnsStandIn> {
  const socket = createSocket("udp4");
  const standIn: DnsStandIn = { server: "", questions: [], silent: false, close: () => new Promise((resolve) => socket.close(() => resolve())) };
  socket.on("message", (query, peer) => {
    // The question: labels from byte 12 up to a zero length, then type and class.
    let at = 12;
    const labels: string[] = [];
    while (query[at] !== 0) {
      labels.push(query.subarray(at + 1, at + 1 + query[at]).toString("ascii"));
      at += query[at] + 1;
    }
    const questionEnd = at + 5;
    const type = query.readUInt16BE(at + 1);
    const name = labels.join(".").toLowerCase();
    standIn.questions.push(`${name} ${type === 1 ? "A" : type === 28 ? "AAAA" : type}`);
    if (standIn.silent) return;
    const known = table[name];
    const answers = (known ?? []).filter((address) => (type === 1 ? isIPv4(address) : type === 28 ? isIPv6(address) : false));
    const header = Buffer.alloc(12);
    query.copy(header, 0, 0, 2);
    header.writeUInt16BE(0x8180 | (known ? 0 : 3), 2);
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(answers.length, 6);
    const records = answers.map((address) => {
      const data = type === 1 ? Buffer.from(address.split(".").map(Number)) : ipv6Bytes(address);
      const record = Buffer.alloc(12);
      record.writeUInt16BE(0xc00c, 0); // the question's name
      record.writeUInt16BE(type, 2);
      record.writeUInt16BE(1, 4); // IN
      record.writeUInt32BE(60, 6);
      record.writeUInt16BE(data.length, 10);
      return Buffer.concat([record, data]);
    });
    socket.send(Buffer.concat([header, query.subarray(12, questionEnd), ...records]), peer.port, peer.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
  standIn.server = `127.0.0.1:${(socket.address() as AddressInfo).port}`;
  return standIn;
}
