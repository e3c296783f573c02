/**
 * Writes the dashboard's app icons (edge/dashboard/assets/icon-*.png) from the favicon's drawing:
 * a white triangle on the accent blue. PNG written by hand (node:zlib for the IDAT stream), so no
 * image library is needed; 4×4 supersampling smooths the edges. Run after changing the drawing:
 * `node scripts/pwa-icons.ts`; the PNGs are committed.
 */
import { writeFileSync } from "node:fs";
import { deflateSync } from "node:zlib";

const accent = [0x33, 0x46, 0xd3];
const white = [0xff, 0xff, 0xff];

const crcTable = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(bytes: Buffer): number {
  let c = 0xffffffff;
  for (const b of bytes) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

/** An RGBA PNG of `size`², each pixel from `paint(x, y)` in 0..1 coordinates. */
function png(size: number, paint: (x: number, y: number) => number[] | undefined): Buffer {
  const rows: Buffer[] = [];
  const samples = 4;
  for (let py = 0; py < size; py++) {
    const row = Buffer.alloc(1 + size * 4); // filter byte 0: none
    for (let px = 0; px < size; px++) {
      const sum = [0, 0, 0, 0];
      for (let sy = 0; sy < samples; sy++) {
        for (let sx = 0; sx < samples; sx++) {
          const color = paint((px + (sx + 0.5) / samples) / size, (py + (sy + 0.5) / samples) / size);
          if (!color) continue;
          for (let i = 0; i < 3; i++) sum[i] += color[i];
          sum[3] += 255;
        }
      }
      const n = samples * samples;
      const covered = sum[3] / 255;
      for (let i = 0; i < 3; i++) row[1 + px * 4 + i] = covered ? Math.round(sum[i] / covered) : 0;
      row[1 + px * 4 + 3] = Math.round(sum[3] / n);
    }
    rows.push(row);
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(size, 4);
  header.set([8, 6, 0, 0, 0], 8); // 8-bit RGBA, no interlace
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(Buffer.concat(rows), { level: 9 })),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

/** The favicon's triangle (16,6)-(25,22)-(7,22) in its 32-unit box, scaled by `scale` about the centre. */
function inTriangle(x: number, y: number, scale: number): boolean {
  const u = (x - 0.5) / scale + 0.5;
  const v = (y - 0.5) / scale + 0.5;
  const [ax, ay, bx, by, cx, cy] = [16 / 32, 6 / 32, 25 / 32, 22 / 32, 7 / 32, 22 / 32];
  const side = (x1: number, y1: number, x2: number, y2: number) => (x2 - x1) * (v - y1) - (y2 - y1) * (u - x1);
  const d1 = side(ax, ay, bx, by);
  const d2 = side(bx, by, cx, cy);
  const d3 = side(cx, cy, ax, ay);
  return (d1 >= 0 && d2 >= 0 && d3 >= 0) || (d1 <= 0 && d2 <= 0 && d3 <= 0);
}

/** Inside a square with corners rounded to radius `r` (the favicon's rx 8 of 32). */
function inRoundedSquare(x: number, y: number, r: number): boolean {
  const dx = Math.max(r - x, 0, x - (1 - r));
  const dy = Math.max(r - y, 0, y - (1 - r));
  return dx * dx + dy * dy <= r * r;
}

/** "any" icons: the favicon as it is. */
const plain = (x: number, y: number) => (!inRoundedSquare(x, y, 8 / 32) ? undefined : inTriangle(x, y, 1) ? white : accent);
/** The maskable icon: full bleed, the triangle inside the safe zone (the middle 80% circle). */
const maskable = (x: number, y: number) => (inTriangle(x, y, 0.7) ? white : accent);

const dir = new URL("../edge/dashboard/assets/", import.meta.url);
writeFileSync(new URL("icon-192.png", dir), png(192, plain));
writeFileSync(new URL("icon-512.png", dir), png(512, plain));
writeFileSync(new URL("icon-maskable-512.png", dir), png(512, maskable));
console.log("wrote icon-192.png, icon-512.png, icon-maskable-512.png");
