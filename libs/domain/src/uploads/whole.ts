import type { ColumnBatch } from './batcher.ts';
import { decideUpload, type UploadComplete, type UploadFailed } from './decide.ts';
import type { ParseUploadOptions } from './parse.ts';
import { readUpload } from './read.ts';
import { startUpload, type UploadStart } from './state.ts';

/** A small upload decided to its end before any of it is written: how it ends and, when it holds, its batches. */
export type DecidedUpload = { readonly end: UploadComplete | UploadFailed; readonly batches: readonly ColumnBatch[] };

/**
 * Reads and decides a whole upload held in memory or read from a small source: every batch is
 * kept until the end decides whether any of it may be written (all or nothing). The api decides
 * a push this way, the ingest worker a group of small uploads. `between` runs after each parsed
 * chunk (a time budget's check); an error it or the source throws ends the upload at a limit when
 * `limitReason` names one, and is rethrown otherwise.
 */
export async function decideWholeUpload(
  chunks: AsyncIterable<Uint8Array>,
  start: UploadStart,
  options: ParseUploadOptions,
  { between, limitReason }: { readonly between?: () => void; readonly limitReason?: (error: unknown) => string | null } = {},
): Promise<DecidedUpload> {
  const run = startUpload(start);
  const batches: ColumnBatch[] = [];
  const ended = (end: UploadComplete | UploadFailed): DecidedUpload => ({ end, batches: end.type === 'UploadFailed' ? [] : batches });
  try {
    return ended(await readUpload(chunks, run, options, { ...(between ? { before: between } : {}), batch: (batch) => void batches.push(batch) }));
  } catch (error) {
    const reason = limitReason?.(error) ?? null;
    if (reason === null) throw error;
    return ended(decideUpload(run, { type: 'LimitReached', reason })[0] as UploadFailed);
  }
}
