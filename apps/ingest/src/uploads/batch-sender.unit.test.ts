import type { LogWriter } from '@meridian/domain';
import { describe, expect, it } from 'vitest';
import { PointBatchSender } from './batch-sender.ts';

/** A transaction whose sends the test acknowledges (or fails) one by one. */
function manualTx() {
  const sends: Array<{ key: string; ack: (partition: number) => void; fail: (e: Error) => void }> = [];
  const tx = {
    send: ({ messages }: { messages: Array<{ key: string }> }) =>
      new Promise((resolve, reject) => {
        sends.push({ key: messages[0]!.key, ack: (partition) => resolve([{ topicName: 'points', partition, errorCode: 0 }]), fail: reject });
      }),
  } as unknown as LogWriter;
  return { tx, sends };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('PointBatchSender', () => {
  it('keeps one send in flight: the next starts only once the last is acknowledged', async () => {
    const { tx, sends } = manualTx();
    const sender = new PointBatchSender(tx, 'points');
    await sender.send('a', Buffer.from('1'), 10); // returns at once: nothing was in flight
    let secondReturned = false;
    const second = sender.send('b', Buffer.from('2'), 5).then(() => (secondReturned = true));
    await tick();
    expect(sends.map((s) => s.key)).toEqual(['a']);
    expect(secondReturned).toBe(false);
    sends[0]!.ack(3);
    await second;
    expect(sends.map((s) => s.key)).toEqual(['a', 'b']);
    sends[1]!.ack(1);
    await sender.flush();
    expect(sender.pointsPerPartition).toEqual(new Map([[3, 10], [1, 5]]));
  });

  it('adds up the points of every batch a partition received', async () => {
    const { tx, sends } = manualTx();
    const sender = new PointBatchSender(tx, 'points');
    await sender.send('m', Buffer.from('x'), 4);
    sends[0]!.ack(2);
    await sender.send('m', Buffer.from('y'), 6);
    sends[1]!.ack(2);
    await sender.flush();
    expect(sender.pointsPerPartition).toEqual(new Map([[2, 10]]));
  });

  it('throws a failed send from the next send or flush, and does not leave it unhandled', async () => {
    const { tx, sends } = manualTx();
    const sender = new PointBatchSender(tx, 'points');
    await sender.send('a', Buffer.from('1'), 1);
    sends[0]!.fail(new Error('broker gone'));
    await tick(); // an unhandled rejection here would fail the test run
    await expect(sender.send('b', Buffer.from('2'), 1)).rejects.toThrow('broker gone');
    await expect(sender.flush()).rejects.toThrow('broker gone');
    expect(sends).toHaveLength(1);
  });
});
