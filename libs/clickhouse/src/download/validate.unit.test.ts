import { describe, expect, it } from 'vitest';
import type { DownloadRequest } from './types.ts';
import { assertValidRequest } from './validate.ts';

const valid: DownloadRequest = {
  metricNames: ['a'],
  fromMs: 0,
  toMs: 1,
  maxRows: 10,
  after: null,
  format: 'csv',
  latestOnly: false,
  gzip: false,
  queryId: '0b7e4a52-5d7e-4a39-9b43-6a1f8d2c9e10',
};

describe('download request validation', () => {
  it('accepts a valid request', () => {
    expect(() => assertValidRequest(valid)).not.toThrow();
  });

  it('accepts only UUIDs as query ids, since they are inlined into KILL QUERY', () => {
    for (const queryId of ["x' OR 1=1 --", '0b7e4a52-5d7e-4a39-9b43-6a1f8d2c9e1', `${valid.queryId}'`]) {
      expect(() => assertValidRequest({ ...valid, queryId })).toThrow('queryId must be a UUID');
    }
  });

  it.each([
    ['a fractional fromMs', { fromMs: 0.5 }],
    ['a NaN toMs', { toMs: Number.NaN }],
    ['an infinite toMs', { toMs: Number.POSITIVE_INFINITY }],
    ['zero maxRows', { maxRows: 0 }],
    ['an invalid cursor', { after: { metric_name: 'a', ts: 1.5, updated_at: 0, partition: 0, offset: 0, row: 0 } }],
    ['another format', { format: 'xml' }],
    ['a query id that is not a UUID', { queryId: "'; DROP TABLE points; --" }],
    ['a name that is not a string', { metricNames: [1] }],
  ])('rejects %s', (_why, change) => {
    expect(() => assertValidRequest({ ...valid, ...change } as DownloadRequest)).toThrow(TypeError);
  });
});
