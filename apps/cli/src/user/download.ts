import { existsSync } from 'node:fs';
import { open, readFile, rename, rm, writeFile, type FileHandle } from 'node:fs/promises';
import type { ApiClient } from './api-client.ts';
import { outputFile, OutputExists, type OutputFile } from './output-file.ts';
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
  /** --from and --to as typed: a relative time (-1h) resolves anew each run, so a resume is matched on these and sends the first run's times. */
  readonly typed?: { readonly from: string | undefined; readonly to: string | undefined };
};

export type DownloadOptions = {
  readonly query: DownloadQuery;
  /** The output file; null writes to stdout (no resume). */
  readonly output: string | null;
  /** Replace an existing output file (else it is refused). */
  readonly force: boolean;
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

/** The query as compared: its fields in one order, absent ones as null (a state read back from JSON has lost its undefined ones). */
function queryKey({ typed, ...q }: DownloadQuery): string {
  const fields: Record<string, unknown> = typed ? { ...q, start_date: typed.from, end_date: typed.to } : q;
  return JSON.stringify(['metrics', 'pattern', 'start_date', 'end_date', 'format', 'latest_only'].map((k) => fields[k] ?? null));
}
const sameQuery = (a: DownloadQuery, b: DownloadQuery) => queryKey(a) === queryKey(b);

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
 * uninterrupted download. With an output file the bytes go to OUTPUT.meridian-partial (the
 * target is only replaced, by a rename, once the download is complete); after each page its bytes
 * are flushed to disk and only then the resume state names the next cursor; --resume cuts the
 * partial file back to the bytes that state vouches for and goes on from its cursor. A failure
 * before any page was recorded leaves nothing behind; a later one keeps the partial file and the
 * state for --resume.
 */
export async function download(client: ApiClient, options: DownloadOptions, progress: Progress): Promise<DownloadSummary> {
  const file = options.output === null ? null : outputFile(options.output, options.force);
  const statePath = options.output === null ? null : resumeStatePath(options.output);
  const state = statePath && options.resume ? await readState(statePath) : null;
  if (state && !sameQuery(state.query, options.query))
    throw new Error(`${statePath} is the resume state of another download (${JSON.stringify(state.query)}); run that one, or remove it to start over`);
  if (state && file && !existsSync(file.partial)) throw new Error(`${statePath} has no partial download beside it (${file.partial}); remove it to start over`);
  // Without --resume a state left by an earlier run describes bytes this run writes over.
  if (statePath && !state) await rm(statePath, { force: true });

  let handle: FileHandle | null = null;
  try {
    if (file) {
      handle = await open(file.partial, state ? 'r+' : 'w');
      if (state) await handle.truncate(state.bytes);
    }
    const query = state?.query ?? options.query;
    const summary = await pages(client, { ...options, query }, progress, handle, state, (next) => writeState(statePath!, next));
    if (handle) {
      await handle.sync();
      await handle.close();
      handle = null;
    }
    await file?.commit();
    if (statePath) await rm(statePath, { force: true });
    return summary;
  } catch (error) {
    await handle?.close();
    await leaveBehind(file, statePath, error);
    throw error;
  }
}

/** After a failure: the partial file stays only beside a resume state that vouches for its bytes. */
async function leaveBehind(file: OutputFile | null, statePath: string | null, error: unknown): Promise<void> {
  if (!file || !statePath) return;
  if (existsSync(statePath) && !(error instanceof OutputExists)) file.keep();
  else {
    await file.discard();
    await rm(statePath, { force: true });
  }
}

async function pages(
  client: ApiClient,
  options: DownloadOptions,
  progress: Progress,
  handle: FileHandle | null,
  state: ResumeState | null,
  saveState: (state: ResumeState) => Promise<void>,
): Promise<DownloadSummary> {
  const { query } = options;
  const resumedFrom = state?.bytes ?? null;
  const toFile = (h: FileHandle) => (bytes: Buffer, position: number) => h.write(bytes, 0, bytes.length, position);
  const toStdout = (bytes: Buffer) => new Promise<void>((resolve, reject) => process.stdout.write(bytes, (e) => (e ? reject(e) : resolve())));
  const out = new Appender(handle ? toFile(handle) : toStdout, resumedFrom ?? 0);
  const line = progress.line('download  starting');
  let rows = state?.rows ?? 0;
  let pages = state?.pages ?? 0;
  let cursor: string | undefined = state?.cursor;
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
    if (handle) {
      await handle.sync(); // the page's bytes are on disk before the state points past them
      await saveState({ version: 1, query, cursor, bytes: out.position, rows, pages });
    }
  }
  await out.add(closing(query.format, out.position === 0));
  await out.flush();
  line.set(`download  ${rows} rows  ${formatBytes(out.position)}  ${pages} page${pages === 1 ? '' : 's'}  done`);
  return { output: options.output, rows, bytes: out.position, pages, resumed_from_bytes: resumedFrom };
}
