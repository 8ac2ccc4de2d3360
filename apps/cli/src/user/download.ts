import { open, readFile, rename, rm, writeFile, type FileHandle } from 'node:fs/promises';
import type { ApiClient } from './api-client.ts';
import { closing, PageJoiner } from './page-joiner.ts';
import { formatBytes, type Progress } from './progress.ts';

/** The parameters that choose the rows: a resume continues only the very same download. */
export type DownloadQuery = {
  readonly metrics: string;
  readonly pattern: string | undefined;
  readonly start_date: string | undefined;
  readonly end_date: string | undefined;
  readonly format: 'csv' | 'json';
  readonly latest_only: boolean;
};

export type DownloadOptions = {
  readonly query: DownloadQuery;
  /** The output file; null writes to stdout (no resume). */
  readonly output: string | null;
  readonly resume: boolean;
  readonly pageRows: number;
};

export type DownloadSummary = { output: string | null; rows: number; bytes: number; pages: number; resumed_from_bytes: number | null };

/** The resume state, beside the output: where the next page starts, written once the bytes before it are on disk. */
type ResumeState = { version: 1; query: DownloadQuery; cursor: string; bytes: number; rows: number; pages: number };

export const resumeStatePath = (output: string) => `${output}.meridian-resume`;

async function readState(path: string): Promise<ResumeState | null> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as ResumeState;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new Error(`${path}: unreadable resume state (${(error as Error).message}); remove it to start over`);
  }
}

/** Written to a temporary file, flushed, then renamed over the old state: never half a state. */
async function writeState(path: string, state: ResumeState): Promise<void> {
  const tmp = `${path}.tmp`;
  await writeFile(tmp, JSON.stringify(state), { flush: true });
  await rename(tmp, path);
}

const sameQuery = (a: DownloadQuery, b: DownloadQuery) => JSON.stringify(a) === JSON.stringify(b);

/** Appends text at a position, batching small pieces into writes of about 1 MiB. */
class Appender {
  private pending: string[] = [];
  private pendingLength = 0;

  private readonly write: (bytes: Buffer, position: number) => Promise<unknown>;
  position: number;

  constructor(write: (bytes: Buffer, position: number) => Promise<unknown>, position: number) {
    this.write = write;
    this.position = position;
  }

  async add(text: string): Promise<void> {
    if (text === '') return;
    this.pending.push(text);
    this.pendingLength += text.length;
    if (this.pendingLength >= 1 << 20) await this.flush();
  }

  async flush(): Promise<void> {
    if (this.pending.length === 0) return;
    const bytes = Buffer.from(this.pending.join(''), 'utf8');
    this.pending = [];
    this.pendingLength = 0;
    await this.write(bytes, this.position);
    this.position += bytes.length;
  }
}

/**
 * Downloads every page (max_rows = pageRows, following X-Next-Cursor) into one file equal to an
 * uninterrupted download. With an output file, after each page its bytes are flushed to disk and
 * only then the resume state names the next cursor; --resume cuts the file back to the bytes
 * that state vouches for and goes on from its cursor.
 */
export async function download(client: ApiClient, options: DownloadOptions, progress: Progress): Promise<DownloadSummary> {
  const { query } = options;
  const statePath = options.output === null ? null : resumeStatePath(options.output);
  let state = statePath && options.resume ? await readState(statePath) : null;
  if (state && !sameQuery(state.query, query)) throw new Error(`${statePath} is the resume state of another download (${JSON.stringify(state.query)}); run that one, or remove it to start over`);

  let handle: FileHandle | null = null;
  if (options.output !== null) {
    handle = await open(options.output, state ? 'r+' : 'w');
    if (state) await handle.truncate(state.bytes);
  }
  const resumedFrom = state?.bytes ?? null;
  const toFile = (h: FileHandle) => (bytes: Buffer, position: number) => h.write(bytes, 0, bytes.length, position);
  const toStdout = (bytes: Buffer) => new Promise<void>((resolve, reject) => process.stdout.write(bytes, (e) => (e ? reject(e) : resolve())));
  const out = new Appender(handle ? toFile(handle) : toStdout, resumedFrom ?? 0);
  const line = progress.line('download  starting');
  let rows = state?.rows ?? 0;
  let pages = state?.pages ?? 0;
  let cursor: string | undefined = state?.cursor;
  try {
    for (;;) {
      const res = await client.send('/api/v1/metrics/download', {
        idempotent: true,
        headers: { 'Accept-Encoding': 'gzip' },
        query: {
          metrics: query.metrics,
          pattern: query.pattern,
          start_date: query.start_date,
          end_date: query.end_date,
          file_format: query.format,
          latest_only: query.latest_only ? 'true' : undefined,
          max_rows: String(options.pageRows),
          cursor,
        },
      });
      // fetch undoes Content-Encoding: gzip as the bytes arrive; the text is joined line by line.
      const joiner = new PageJoiner(query.format, rows, out.position === 0);
      const decoder = new TextDecoder('utf-8', { fatal: true });
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        await out.add(joiner.push(decoder.decode(chunk, { stream: true })));
        line.set(`download  ${rows + joiner.rows} rows  ${formatBytes(out.position)}  page ${pages + 1}`);
      }
      await out.add(joiner.push(decoder.decode()));
      await out.add(joiner.end());
      await out.flush();
      rows += joiner.rows;
      pages++;
      cursor = res.headers.get('X-Next-Cursor') ?? undefined;
      if (cursor === undefined) break;
      if (handle && statePath) {
        await handle.sync(); // the page's bytes are on disk before the state points past them
        state = { version: 1, query, cursor, bytes: out.position, rows, pages };
        await writeState(statePath, state);
      }
    }
    await out.add(closing(query.format, out.position === 0));
    await out.flush();
    if (handle) await handle.sync();
    if (statePath) await rm(statePath, { force: true });
    line.set(`download  ${rows} rows  ${formatBytes(out.position)}  ${pages} page${pages === 1 ? '' : 's'}  done`);
    return { output: options.output, rows, bytes: out.position, pages, resumed_from_bytes: resumedFrom };
  } finally {
    await handle?.close();
  }
}
