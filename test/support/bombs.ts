import { constants, crc32, deflateRawSync } from 'node:zlib';

/**
 * A gzip file whose content is `head`, then `block` repeated `repeats` times, then `tail`:
 * a decompression bomb of any size, built in the time it takes to checksum what it expands to.
 *
 * Gzip at level 9 of gigabytes takes about 3 s per GiB here. Instead each piece is deflated
 * once from a fresh state and ended with a full flush (an empty stored block, byte-aligned,
 * dictionary reset), so a flushed piece is a self-contained run of deflate blocks: the same
 * compressed bytes stand for every repeat of `block`. The last piece ends the stream; the
 * trailer holds the CRC-32 and length of the whole expanded content, as any gunzip checks.
 */
export function gzipBomb(parts: { head: Buffer | string; block: Buffer; repeats: number; tail: Buffer | string }): { gzip: Buffer; expandedBytes: number } {
  const head = Buffer.from(parts.head);
  const tail = Buffer.from(parts.tail);
  const flushed = (b: Buffer) => deflateRawSync(b, { level: 9, finishFlush: constants.Z_FULL_FLUSH });
  const body = [flushed(head), ...Array<Buffer>(parts.repeats).fill(flushed(parts.block)), deflateRawSync(tail, { level: 9 })];

  let crc = crc32(head);
  for (let i = 0; i < parts.repeats; i++) crc = crc32(parts.block, crc);
  crc = crc32(tail, crc);
  const expandedBytes = head.length + parts.block.length * parts.repeats + tail.length;
  const trailer = Buffer.alloc(8);
  trailer.writeUInt32LE(crc >>> 0, 0);
  trailer.writeUInt32LE(expandedBytes % 2 ** 32, 4); // ISIZE: the length modulo 2^32 (RFC 1952)
  // Magic, deflate, no flags, no mtime, maximum compression, OS unknown.
  const header = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 0xff]);
  return { gzip: Buffer.concat([header, ...body, trailer]), expandedBytes };
}

/** `row` repeated to about `bytes` (whole rows only): a block for gzipBomb made of one line. */
export function rowsBlock(row: string, bytes = 1 << 20): Buffer {
  return Buffer.from(row.repeat(Math.max(1, Math.floor(bytes / Buffer.byteLength(row)))));
}
