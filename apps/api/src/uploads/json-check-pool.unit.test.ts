import { createHash } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { jsonCheckPool } from './json-check-pool.ts';

describe('the JSON upload check pool', () => {
  const pool = jsonCheckPool({ workers: 1, heapMb: 64, maxValues: 10 });
  afterAll(() => pool.close());

  it('parses and hashes a body on a worker thread', async () => {
    const body = Buffer.from('{"metric_name":"cpu","values":[{"timestamp":"2024-01-01T00:00:00Z","value":1},{"x":2}]}');
    const expected = createHash('sha256').update(body).digest();
    const copy = Buffer.from(body);
    const checked = await pool.check(body);
    expect(checked.sha256.equals(expected)).toBe(true);
    expect(checked.body.equals(copy)).toBe(true);
    const { check } = checked;
    expect(check).toEqual({ kind: 'ok', metric_name: 'cpu', values: 2 });
  });

  it('names what is wrong with malformed JSON and with the wrong shape', async () => {
    expect((await pool.check(Buffer.from('{"metric_name":'))).check).toMatchObject({ kind: 'invalid', errors: [{ field: 'body', reason: 'malformed JSON' }] });
    expect((await pool.check(Buffer.from('{"metric_name":3,"values":{}}'))).check).toMatchObject({
      kind: 'invalid',
      errors: [{ field: 'body.metric_name' }, { field: 'body.values' }],
    });
  });

  it('refuses unparsed a body with more JSON values than an upload may hold (a parse of `[[],[],...]` would allocate millions of arrays)', async () => {
    const bomb = Buffer.from(`{"metric_name":"cpu","values":[${'[],'.repeat(3_000_000)}[]]}`);
    expect((await pool.check(bomb)).check).toEqual({ kind: 'too_many_values' });
    const eleven = Buffer.from(`{"metric_name":"cpu","values":[${'1,'.repeat(10)}1]}`);
    expect((await pool.check(eleven)).check).toEqual({ kind: 'too_many_values' });
    const ten = Buffer.from(
      `{"metric_name":"cpu","values":[${'{"timestamp":"2024-01-01T00:00:00Z","value":1},'.repeat(9)}{"timestamp":"2024-01-01T00:00:00Z","value":1}]}`,
    );
    expect((await pool.check(ten)).check).toEqual({ kind: 'ok', metric_name: 'cpu', values: 10 });
  });

  it('hands a large body to the worker and back without copying it', async () => {
    const large = Buffer.concat([Buffer.from('{"metric_name":"big","values":['), Buffer.alloc(1 << 20, 0x20), Buffer.from(']}')]);
    const copy = Buffer.from(large);
    const checked = await pool.check(large);
    expect(large.byteLength).toBe(0); // transferred
    expect(checked.body.equals(copy)).toBe(true);
    expect(checked.check).toEqual({ kind: 'ok', metric_name: 'big', values: 0 });
  });

  it('checks a body up to its inline bytes on the calling thread, as a worker would, and a larger one on a worker', async () => {
    const inline = jsonCheckPool({ workers: 1, heapMb: 64, maxValues: 10, inlineBytes: 100 });
    try {
      const small = Buffer.from('{"metric_name":"cpu","values":[{"timestamp":"2024-01-01T00:00:00Z","value":1},{"x":2}]}');
      expect(small.length).toBeLessThanOrEqual(100);
      const here = await inline.check(small);
      expect(here.body).toBe(small); // not handed to a thread
      const there = await pool.check(Buffer.from(small));
      expect({ ...here, body: here.body.toString() }).toEqual({ ...there, body: there.body.toString() });
      const large = Buffer.from(new TextEncoder().encode(`{"metric_name":"cpu","values":[${'1,'.repeat(60)}1]}`).buffer); // its own memory: transferred, not copied
      expect(large.length).toBeGreaterThan(100);
      expect((await inline.check(large)).check).toEqual({ kind: 'too_many_values' });
      expect(large.byteLength).toBe(0); // transferred to the worker
    } finally {
      await inline.close();
    }
  });

  it('checks bodies in order when more arrive than it has workers', async () => {
    const results = await Promise.all([1, 2, 3].map((n) => pool.check(Buffer.from(`{"metric_name":"m${n}","values":[${'1,'.repeat(n)}1]}`))));
    expect(results.map((r) => r.check)).toEqual([1, 2, 3].map((n) => ({ kind: 'ok', metric_name: `m${n}`, values: n + 1 })));
  });

  it("a body that exhausts a worker's heap is a 413 problem, not a 500; the pool goes on with a new worker", async () => {
    // The setting's least heap (32 MB): below it, a worker loading its modules on a loaded machine
    // can run out before its first job, which is no body's fault.
    const small = jsonCheckPool({ workers: 1, heapMb: 32, maxValues: 10_000_000 });
    try {
      // 400,000 values: four times what exhausts 32 MB (100,000 already do). A stray byte at the
      // end: a well-formed body is vouched for without a parse (json-upload-scan.ts), this one is
      // parsed to say what is wrong, and the parse runs out of heap before the end.
      const values = `{"timestamp":"2024-01-01T00:00:00Z","value":1,"pad":"${'x'.repeat(64)}"},`.repeat(400_000);
      await expect(small.check(Buffer.from(`{"metric_name":"cpu","values":[${values}1]} x`))).rejects.toMatchObject({ code: 'payload_too_large' });
      expect((await small.check(Buffer.from('{"metric_name":"cpu","values":[1]}'))).check).toEqual({ kind: 'ok', metric_name: 'cpu', values: 1 });
    } finally {
      await small.close();
    }
  }, 30_000); // CPU-bound (a worker parsing until its heap runs out, then a new worker): not a timing assertion

  it('refuses checks once closed', async () => {
    const closed = jsonCheckPool({ workers: 1, heapMb: 64, maxValues: 10 });
    await closed.close();
    await expect(closed.check(Buffer.from('{}'))).rejects.toMatchObject({ code: 'unavailable' });
  });
});
