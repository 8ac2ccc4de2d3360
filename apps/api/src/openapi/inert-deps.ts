import { initialAccounts, initialTasks } from '@meridian/domain';
import { createLogger } from '@meridian/observability';
import type { ApiDeps } from '../app.ts';
import type { BlobStore } from '../blob-store.ts';
import { FileCatalog } from '../files/catalog.ts';
import { createCursorSeal } from '../http/cursor-seal.ts';
import { PerUserSlots } from '../http/per-user-slots.ts';

/**
 * Dependencies of the api that answer nothing: enough to build its routes, and so its OpenAPI
 * document, without Kafka, ClickHouse or MinIO (the document's unit test, and the docs build,
 * which renders the API reference from it). A handler that ran on them would throw.
 *
 * Stays one function: one object literal, field for field ApiDeps' shape; split, its pieces would only mirror
 * that type's parts.
 */
export function inertApiDeps(): ApiDeps {
  const cursors = createCursorSeal('inert secret of a structure-only test');
  const inert = async (): Promise<never> => {
    throw new Error('inert');
  };
  const submit = {
    producer: inert,
    codec: {
      encode: () => Buffer.alloc(0),
      decode: (): never => {
        throw new Error('inert');
      },
    },
    topic: 't',
    ackTimeoutMs: 1,
    applied: async () => {},
  };
  return {
    logger: createLogger({ name: 't', level: 'silent' }),
    probes: [],
    readyTimeoutMs: 100,
    smallJsonBodyBytes: 16384,
    accounts: { state: initialAccounts(), ready: true, execute: async () => [] },
    tasks: {
      live: () => initialTasks(),
      find: async () => undefined,
      readModel: { list: async () => [] },
      syncToEnd: async () => {},
      cursors,
      waits: { untilEnded: async () => {}, slots: new PerUserSlots(1, { setting: 'x', noun: 'x' }), maxSeconds: 0 },
    },
    download: {
      conn: { url: 'http://127.0.0.1:1', username: 'x', password: '', database: 'x' },
      catalog: { list: async () => [], entries: async () => [], families: async () => [], matching: async () => [] },
      limits: { maxRowsCeiling: 10, maxListNames: 10, maxRollupRows: 10 },
      batchRows: 65536,
      partRows: 1_000_000,
      maxBodyBytes: 1024,
      cursors,
    },
    deletions: {
      catalog: { list: async () => [], entries: async () => [], families: async () => [], matching: async () => [] },
      maxListNames: 10,
      maxPoints: 10,
      count: inert,
      append: inert,
      applied: async () => {},
      tasks: { unfinished: () => new Map(), max: 1 },
    },
    series: {
      conn: { url: 'http://127.0.0.1:1', username: 'x', password: '', database: 'x' },
      catalog: { list: async () => [], entries: async () => [], families: async () => [], matching: async () => [] },
      limits: { maxPoints: 10, maxSeries: 1 },
    },
    uploads: {
      storage: {} as BlobStore,
      limits: { jsonBodyBytes: 1, uploadBytes: 1, pointsPerJsonUpload: 1 },
      jsonChecker: {
        check: async () => {
          throw new Error('inert');
        },
      },
      submit: { ...submit, find: async () => undefined },
    },
    files: {
      storage: {} as BlobStore,
      files: new FileCatalog({
        readModel: { get: inert, rows: inert, list: inert, usage: inert, positions: inert, nextSeq: inert },
        logEnds: inert,
        append: inert,
        ackTimeoutMs: 1,
        waitMs: 1,
        logger: createLogger({ name: 't', level: 'silent' }),
      }),
      tasks: () => initialTasks(),
      submit,
      limits: { uploadBytes: 1, defaultQuotaBytes: 1 },
    },
    events: {
      plan: async () => {
        throw new Error('inert');
      },
      stream: () => {
        throw new Error('inert');
      },
      maxEventsCeiling: 1,
      cursors,
    },
  };
}
