import { Worker } from 'node:worker_threads';
import { DomainError } from '@meridian/domain';
import { checkJsonBody } from './json-check.ts';
import type { JsonUploadCheck } from './json-upload-check.ts';
import type { PushDecision, PushRequest } from './push-decision.ts';

/**
 * A JSON upload body checked off the event loop: the body (handed back), its SHA-256, what
 * checkJsonUpload found and, when it was asked to decide a push and the check passed, the push's decision.
 */
export type CheckedJsonUpload = { readonly body: Buffer; readonly sha256: Buffer; readonly check: JsonUploadCheck; readonly decision: PushDecision | null };

export type JsonUploadChecker = {
  /**
   * Hands the body's memory to a worker and back, without a copy (a structured clone of
   * 16 MiB holds the event loop about 100 ms): the Buffer passed in may be emptied; use the
   * one in the answer. A body of at most the pool's `inlineBytes` is checked where it is.
   */
  check(body: Buffer, push?: PushRequest): Promise<CheckedJsonUpload>;
  /** Ends every worker; checks still waiting are refused with 503. */
  close(): Promise<void>;
};

export type JsonCheckPoolOptions = {
  /** Worker threads at most (MERIDIAN_JSON_UPLOAD_CHECK_WORKERS); they start on first use. */
  readonly workers: number;
  /** Old-generation heap of each worker (MERIDIAN_JSON_UPLOAD_CHECK_HEAP_MB). */
  readonly heapMb: number;
  /** Values a JSON upload may hold (MERIDIAN_MAX_POINTS_PER_JSON_UPLOAD): bounds what a parse allocates. */
  readonly maxValues: number;
  /**
   * Bodies up to this many bytes are checked on the calling thread (MERIDIAN_JSON_UPLOAD_CHECK_INLINE_BYTES;
   * absent, none): handing a body to a worker and its answer back costs more than checking a small one.
   */
  readonly inlineBytes?: number;
};

type Job = { readonly body: Buffer; readonly push: PushRequest | null; resolve(result: CheckedJsonUpload): void; reject(error: unknown): void };

const workerUrl = new URL('./json-check-worker.ts', import.meta.url);

/**
 * A bounded pool of worker threads that parse and hash JSON upload bodies, one body per worker
 * at a time; more bodies wait in order. A worker that fails is replaced. (Its heap limit is a
 * backstop only: V8 cannot stop a JSON.parse midway, so checkJsonUpload bounds what a parse may
 * allocate before it starts.) A body of at most `inlineBytes` is checked on the calling thread
 * instead: posting it and its answer between threads costs more than the check of a small body.
 *
 * Stays one function: start, run and next are named already and share the pool's state (idle, all, waiting,
 * closed) by closure; as a class it would be the same lines.
 */
export function jsonCheckPool(options: JsonCheckPoolOptions): JsonUploadChecker {
  const idle: Worker[] = [];
  const all = new Set<Worker>();
  const waiting: Job[] = [];
  let closed = false;

  function start(): Worker {
    const worker = new Worker(workerUrl, {
      workerData: { maxValues: options.maxValues },
      resourceLimits: { maxOldGenerationSizeMb: options.heapMb },
      execArgv: [],
    });
    worker.unref(); // an idle pool never keeps the process alive
    // Heard while idle too (run() hears it for a job): an idle worker that fails leaves the pool
    // rather than ending the process with an unheard 'error' event.
    worker.on('error', () => {
      all.delete(worker);
      const at = idle.indexOf(worker);
      if (at !== -1) idle.splice(at, 1);
    });
    all.add(worker);
    return worker;
  }

  function run(worker: Worker, job: Job): void {
    const done = (outcome: () => void, keep: boolean) => {
      worker.off('message', onMessage);
      worker.off('error', onError);
      worker.off('exit', onExit);
      outcome();
      if (keep && !closed) idle.push(worker);
      else {
        all.delete(worker);
        // A worker that died of its heap has its end reported by the 'error' above; terminate() may
        // then reject with the same error, which is no news.
        worker.terminate().catch(() => undefined);
      }
      next();
    };
    const onMessage = (result: { bytes: Uint8Array; sha256: Uint8Array; check: JsonUploadCheck; decision: PushDecision | null }) =>
      done(
        () =>
          job.resolve({
            body: Buffer.from(result.bytes.buffer, result.bytes.byteOffset, result.bytes.byteLength),
            sha256: Buffer.from(result.sha256.buffer, result.sha256.byteOffset, result.sha256.byteLength),
            check: result.check,
            decision: result.decision,
          }),
        true,
      );
    // A worker that dies on a body (out of its heap) is the body's fault: 413, never a 500.
    const onError = (error: Error & { code?: string }) =>
      done(
        () =>
          job.reject(
            error.code === 'ERR_WORKER_OUT_OF_MEMORY'
              ? new DomainError(
                  'payload_too_large',
                  'the JSON upload needs more memory to check than MERIDIAN_JSON_UPLOAD_CHECK_HEAP_MB allows; send it as a file',
                  [],
                  { cause: error },
                )
              : new DomainError('unavailable', 'the JSON upload check failed; retry', [], { cause: error }),
          ),
        false,
      );
    const onExit = () => done(() => job.reject(new DomainError('unavailable', 'the JSON upload check stopped; retry')), false);
    worker.on('message', onMessage);
    worker.once('error', onError);
    worker.once('exit', onExit);
    const bytes = ownsItsMemory(job.body) ? job.body : new Uint8Array(job.body); // a pooled small Buffer shares its memory: copy it
    worker.postMessage({ bytes, push: job.push }, [bytes.buffer as ArrayBuffer]);
  }

  function next(): void {
    while (waiting.length > 0 && !closed) {
      const worker = idle.pop() ?? (all.size < options.workers ? start() : undefined);
      if (!worker) return;
      run(worker, waiting.shift()!);
    }
  }

  /** Whether the bytes are the whole of their ArrayBuffer, so it can be transferred without taking others' bytes. */
  function ownsItsMemory(body: Buffer): boolean {
    return body.byteOffset === 0 && body.byteLength === body.buffer.byteLength && body.buffer instanceof ArrayBuffer;
  }

  return {
    async check(body, push) {
      if (closed) throw new DomainError('unavailable', 'the api is stopping');
      const inline = options.inlineBytes ?? 0;
      if (inline > 0 && body.length <= inline) return { body, ...(await checkJsonBody(body, push ?? null, options.maxValues)) };
      return new Promise((resolve, reject) => {
        waiting.push({ body, push: push ?? null, resolve, reject });
        next();
      });
    },
    async close() {
      closed = true;
      for (const job of waiting.splice(0)) job.reject(new DomainError('unavailable', 'the api is stopping'));
      await Promise.all([...all].map((w) => w.terminate()));
      all.clear();
      idle.length = 0;
    },
  };
}
