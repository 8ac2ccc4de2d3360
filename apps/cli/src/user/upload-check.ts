import { createReadStream } from 'node:fs';
import { createGunzip } from 'node:zlib';
import { metricNameProblem } from '@meridian/domain';

/** How much of a file is read to tell whether its rows name their metric. */
const HEAD_BYTES = 64 * 1024;

/** The first bytes of a file (decompressed when it is gzip), and whether that is all of it. */
async function head(path: string): Promise<{ text: string; whole: boolean }> {
  const raw = createReadStream(path, { start: 0, end: HEAD_BYTES - 1 });
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of raw) {
    chunks.push(chunk as Buffer);
    length += (chunk as Buffer).length;
  }
  let bytes = Buffer.concat(chunks, length);
  const rawWhole = length < HEAD_BYTES;
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) {
    const out: Buffer[] = [];
    let outLength = 0;
    const gunzip = createGunzip();
    gunzip.on('data', (c: Buffer) => {
      out.push(c);
      outLength += c.length;
    });
    // A head cut mid-stream ends with "unexpected end of file": what came before it is kept.
    await new Promise<void>((resolve) => {
      gunzip.on('end', resolve);
      gunzip.on('error', () => resolve());
      gunzip.end(bytes);
    });
    bytes = Buffer.concat(out, outLength);
    return { text: bytes.toString('utf8'), whole: false };
  }
  return { text: bytes.toString('utf8'), whole: rawWhole };
}

/**
 * Why a file cannot be uploaded without --metric, or null when it can (or cannot be told from
 * its head: the api decides). Certain cases only: a CSV whose first line is not the download
 * layout's header names no metric on any row; a JSON or NDJSON file read whole without a
 * "metric_name" anywhere names none.
 */
export async function needsMetric(path: string): Promise<string | null> {
  const { text, whole } = await head(path);
  const start = text.replace(/^\uFEFF/, '').trimStart();
  if (start === '') return whole ? 'the file is empty' : null;
  if (start[0] === '[' || start[0] === '{') {
    return whole && !start.includes('"metric_name"') ? 'its rows do not name their metric (no "metric_name")' : null;
  }
  const firstLine = start.split(/\r?\n/, 1)[0]!;
  const columns = firstLine.split(',').map((c) =>
    c
      .trim()
      .replace(/^"(.*)"$/, '$1')
      .toLowerCase(),
  );
  if (columns[0] === 'metric_name') return null;
  return `its rows do not name their metric (first line: ${JSON.stringify(firstLine.slice(0, 80))})`;
}

/** Why a --metric value would be refused by the api, in the CLI's words; null when it is fine. */
export function metricFlagProblem(metric: string): string | null {
  const problem = metricNameProblem(metric);
  return problem === null ? null : `--metric ${JSON.stringify(metric)} is not a valid metric name: it ${problem}`;
}
