import type { ColumnBatch } from './batcher.ts';
import { decideUpload, type UploadComplete, type UploadFact, type UploadFailed } from './decide.ts';
import { parseUploadBatches, type ParseUploadOptions } from './parse.ts';
import type { UploadRun } from './state.ts';

/** What becomes of an upload's batches as the decider releases them: the strategy of a read. */
export type UploadReader = {
  /** Runs before each parsed chunk is decided (a time budget's check). */
  readonly before?: () => void;
  /** A batch the decider released; `inputEnded`: released by the end of the input, not while it was read. */
  readonly batch: (batch: ColumnBatch, inputEnded: boolean) => void | Promise<void>;
  /** Runs after each parsed chunk that did not end the upload (progress, heartbeats). */
  readonly after?: () => void | Promise<void>;
};

/**
 * The one read loop of an upload: parses the bytes, hands each chunk to the decider and each
 * batch it releases to the reader, and returns how the upload ended (the end of the input always
 * ends it). Whether batches are kept until the end (a whole upload: a push, a group) or sent as
 * they come (a large upload, staged or not) is the reader's; an error of the source, the parser
 * or the reader is thrown.
 */
export async function readUpload(
  chunks: AsyncIterable<Uint8Array>,
  run: UploadRun,
  options: ParseUploadOptions,
  reader: UploadReader,
): Promise<UploadComplete | UploadFailed> {
  const take = async (facts: readonly UploadFact[], inputEnded: boolean): Promise<UploadComplete | UploadFailed | null> => {
    for (const fact of facts) {
      if (fact.type !== 'BatchReady') return fact;
      await reader.batch(fact.batch, inputEnded);
    }
    return null;
  };
  for await (const items of parseUploadBatches(chunks, options)) {
    reader.before?.();
    const end = await take(decideUpload(run, { type: 'ItemsParsed', items }), false);
    if (end !== null) return end;
    await reader.after?.();
  }
  return (await take(decideUpload(run, { type: 'InputEnded' }), true))!; // the end of the input always ends the upload
}
