import { describe, expect, it } from 'vitest';
import type { UserRecord } from '../accounts/state.ts';
import { formatTimestamp } from '../points/timestamp.ts';
import type { ColumnBatch } from './batcher.ts';
import { readUpload } from './read.ts';
import { startUpload } from './state.ts';

const writer: UserRecord = {
  user_name: 'ada',
  is_admin: false,
  created_at: 0,
  disabled_at: null,
  key_ids: [],
  entitlements: [{ match: 'prefix', value: 'cpu', access: 'rw' }],
  file_quota_bytes: null,
};
const enc = new TextEncoder();
async function* chunks(parts: readonly string[]): AsyncGenerator<Uint8Array> {
  for (const part of parts) yield enc.encode(part);
}
const rows = (from: number, to: number) =>
  Array.from({ length: to - from }, (_, i) => `${formatTimestamp(Date.UTC(2024, 0, 1) + (from + i) * 1000)},${from + i}\n`).join('');

describe('the one upload read loop', () => {
  it('hands each released batch to the reader, says which the end of the input released, and runs before and after each chunk', async () => {
    const run = startUpload({ on_error: 'fail', user: () => writer, batch: { points: 2, bytes: 921_600 }, maxBufferedPoints: 2 });
    const seen: Array<[number, boolean]> = [];
    const calls: string[] = [];
    const end = await readUpload(
      chunks([rows(0, 3), rows(3, 5)]),
      run,
      { metricName: 'cpu' },
      {
        before: () => calls.push('before'),
        batch: (batch: ColumnBatch, inputEnded) => {
          seen.push([batch.timestamps.length, inputEnded]);
        },
        after: () => {
          calls.push('after');
        },
      },
    );
    expect(end).toMatchObject({ type: 'UploadComplete', points_accepted: 5 });
    expect(seen.reduce((n, [points]) => n + points, 0)).toBe(5);
    expect(seen.at(-1)![1]).toBe(true);
    expect(seen.slice(0, -1).every(([, inputEnded]) => !inputEnded)).toBe(true);
    expect(calls).toEqual(['before', 'after', 'before', 'after']);
  });

  it("a reader's error is thrown out of the loop", async () => {
    const run = startUpload({ on_error: 'fail', user: () => writer, batch: { points: 2, bytes: 921_600 }, maxBufferedPoints: 2 });
    const full = new Error('no room');
    const reading = readUpload(
      chunks([rows(0, 3)]),
      run,
      { metricName: 'cpu' },
      {
        batch: () => {
          throw full;
        },
      },
    );
    await expect(reading).rejects.toBe(full);
  });
});
