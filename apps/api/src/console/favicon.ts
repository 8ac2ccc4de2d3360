/**
 * The site's icon, /favicon.ico: a 16×16 ICO drawn here (a dark tile with a rising line in the
 * console's blue), so browsers asking for it get 200 and no file is kept for it. An ICO holds
 * a 32-bit BMP bottom-up, then a 1-bit AND mask (all zeros: the alpha channel decides).
 */
const SIZE = 16;

function pixels(): Uint8Array {
  const rgba = new Uint8Array(SIZE * SIZE * 4);
  const set = (x: number, y: number, [r, g, b, a]: readonly number[]) => {
    const i = (y * SIZE + x) * 4;
    rgba.set([r!, g!, b!, a!], i);
  };
  for (let y = 0; y < SIZE; y++) {
    for (let x = 0; x < SIZE; x++) {
      const corner = (x === 0 || x === SIZE - 1) && (y === 0 || y === SIZE - 1);
      if (!corner) set(x, y, [0x1d, 0x24, 0x30, 255]);
    }
  }
  // A line through (2, 12), (6, 8), (9, 10), (13, 3): a chart going up.
  const line: Array<[number, number]> = [
    [2, 12],
    [6, 8],
    [9, 10],
    [13, 3],
  ];
  for (let k = 0; k < line.length - 1; k++) {
    const [x0, y0] = line[k]!;
    const [x1, y1] = line[k + 1]!;
    const steps = Math.max(Math.abs(x1 - x0), Math.abs(y1 - y0)) * 2;
    for (let s = 0; s <= steps; s++) {
      const x = Math.round(x0 + ((x1 - x0) * s) / steps);
      const y = Math.round(y0 + ((y1 - y0) * s) / steps);
      set(x, y, [0x9c, 0xc4, 0xff, 255]);
      if (y + 1 < SIZE) set(x, y + 1, [0x0b, 0x5c, 0xd5, 255]);
    }
  }
  return rgba;
}

export function faviconIco(): Buffer {
  const rgba = pixels();
  const xor = Buffer.alloc(SIZE * SIZE * 4);
  for (let y = 0; y < SIZE; y++) {
    for (let x = 0; x < SIZE; x++) {
      const from = (y * SIZE + x) * 4;
      const to = ((SIZE - 1 - y) * SIZE + x) * 4; // BMP rows go bottom-up
      xor[to] = rgba[from + 2]!; // B
      xor[to + 1] = rgba[from + 1]!; // G
      xor[to + 2] = rgba[from]!; // R
      xor[to + 3] = rgba[from + 3]!; // A
    }
  }
  const mask = Buffer.alloc(SIZE * 4); // 16 rows of 16 bits, each padded to 32
  const header = Buffer.alloc(40);
  header.writeUInt32LE(40, 0); // BITMAPINFOHEADER
  header.writeInt32LE(SIZE, 4);
  header.writeInt32LE(SIZE * 2, 8); // XOR and AND masks
  header.writeUInt16LE(1, 12); // planes
  header.writeUInt16LE(32, 14); // bits per pixel
  header.writeUInt32LE(xor.length + mask.length, 20);
  const image = Buffer.concat([header, xor, mask]);
  const dir = Buffer.alloc(6 + 16);
  dir.writeUInt16LE(0, 0);
  dir.writeUInt16LE(1, 2); // an icon
  dir.writeUInt16LE(1, 4); // one image
  dir.writeUInt8(SIZE, 6);
  dir.writeUInt8(SIZE, 7);
  dir.writeUInt16LE(1, 10); // planes
  dir.writeUInt16LE(32, 12); // bits per pixel
  dir.writeUInt32LE(image.length, 14);
  dir.writeUInt32LE(dir.length, 18); // offset of the image
  return Buffer.concat([dir, image]);
}
