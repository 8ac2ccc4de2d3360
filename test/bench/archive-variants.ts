import zlib from 'node:zlib';
import type { Settings } from '@meridian/config';
import { createLogger, silenceKnownWarnings } from '@meridian/observability';
import { createPlatform } from '../support/platform.ts';

/**
 * The points archive's segments compressed otherwise, side by side in one run: each segment the
 * archiver stored (zstd of its framing) is read back,
 * decompressed and compressed again per case, in this process, one case after another over the
 * same segments (the archiver stores level 9, segment.ts). CPU from process.cpuUsage around the synchronous calls (this process does
 * nothing else meanwhile): what the ingest worker's archive pass would spend on compression.
 */
export type ArchiveVariant = {
  readonly name: string;
  readonly storedBytes: number;
  readonly compressCpuSeconds: number;
  readonly decompressCpuSeconds: number;
};

type Case = { readonly name: string; readonly params: Record<number, number> };

const { ZSTD_c_compressionLevel: LEVEL, ZSTD_c_enableLongDistanceMatching: LONG, ZSTD_c_windowLog: WINDOW } = zlib.constants;

export const ARCHIVE_CASES: readonly Case[] = [
  { name: 'zstd 3 (before)', params: { [LEVEL]: 3 } },
  { name: 'zstd 6', params: { [LEVEL]: 6 } },
  { name: 'zstd 9 (now)', params: { [LEVEL]: 9 } },
  { name: 'zstd 12', params: { [LEVEL]: 12 } },
  { name: 'zstd 19', params: { [LEVEL]: 19 } },
  { name: 'zstd 3, long, 128 MiB window', params: { [LEVEL]: 3, [LONG]: 1, [WINDOW]: 27 } },
  { name: 'zstd 9, long, 128 MiB window', params: { [LEVEL]: 9, [LONG]: 1, [WINDOW]: 27 } },
];

const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

/** The scope's archived segments of the points topic, uncompressed, in key order. */
async function archivedFraming(settings: Settings): Promise<Buffer[]> {
  silenceKnownWarnings();
  const platform = createPlatform(settings, createLogger({ name: 'bench', level: 'warn' }), 'bench');
  try {
    const { client, bucket } = platform.storage;
    const prefix = `_archive/${platform.topics.points}/segments/`;
    const names: string[] = [];
    for await (const item of client.listObjectsV2(bucket, prefix, true) as AsyncIterable<{ name?: string }>) if (item.name) names.push(item.name);
    const out: Buffer[] = [];
    for (const name of names.sort()) {
      const chunks: Buffer[] = [];
      for await (const chunk of await client.getObject(bucket, name)) chunks.push(chunk as Buffer);
      out.push(zlib.zstdDecompressSync(Buffer.concat(chunks)));
    }
    return out;
  } finally {
    await platform.close();
  }
}

export async function archiveVariants(
  settings: Settings,
  cases: readonly Case[] = ARCHIVE_CASES,
): Promise<{ segments: number; framingBytes: number; variants: ArchiveVariant[] }> {
  const framing = await archivedFraming(settings);
  const variants: ArchiveVariant[] = [];
  for (const c of cases) {
    let started = cpu();
    const stored = framing.map((raw) => zlib.zstdCompressSync(raw, { params: c.params }));
    const compressCpuSeconds = cpu() - started;
    started = cpu();
    for (const s of stored) zlib.zstdDecompressSync(s);
    const decompressCpuSeconds = cpu() - started;
    variants.push({ name: c.name, storedBytes: stored.reduce((n, s) => n + s.length, 0), compressCpuSeconds, decompressCpuSeconds });
  }
  return { segments: framing.length, framingBytes: framing.reduce((n, b) => n + b.length, 0), variants };
}
