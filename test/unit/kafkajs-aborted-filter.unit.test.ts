import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

// The function patched by patches/kafkajs+2.2.4.patch, as kafkajs's consumer batches call it.
type Message = { offset: string; key: Buffer | null; isControlRecord: boolean; batchContext: { producerId: string; inTransaction: boolean } };
const filterAbortedMessages = createRequire(import.meta.url)('kafkajs/src/consumer/filterAbortedMessages.js') as (input: {
  messages: Message[];
  abortedTransactions: { producerId: string; firstOffset: string }[];
}) => Message[];

const ABORT = Buffer.from([0, 0, 0, 0]);
const COMMIT = Buffer.from([0, 0, 0, 1]);
const data = (offset: number, producerId: string, key: Buffer | null = null): Message => ({
  offset: String(offset),
  key,
  isControlRecord: false,
  batchContext: { producerId, inTransaction: true },
});
const marker = (offset: number, producerId: string, key: Buffer): Message => ({
  offset: String(offset),
  key,
  isControlRecord: true,
  batchContext: { producerId, inTransaction: true },
});
const offsets = (messages: Message[]) => messages.filter((m) => !m.isControlRecord).map((m) => Number(m.offset));

describe('kafkajs read_committed filtering of aborted transactions (patched)', () => {
  it('drops a fenced transaction whose abort marker follows later transactions', () => {
    // 0: producer 7 opens a transaction and crashes; 1-2 producer 10 aborts; 3-4 producer 10 commits;
    // 5: producer 7's successor fences it (abort marker). The broker lists aborts in marker order.
    const messages = [data(0, '7'), data(1, '10'), marker(2, '10', ABORT), data(3, '10'), marker(4, '10', COMMIT), marker(5, '7', ABORT)];
    const kept = filterAbortedMessages({
      messages,
      abortedTransactions: [
        { producerId: '10', firstOffset: '1' },
        { producerId: '7', firstOffset: '0' },
      ],
    });
    expect(offsets(kept)).toEqual([3]);
  });

  it('enters every aborted transaction that began before a fetch that starts inside them', () => {
    const messages = [data(10, '7'), data(11, '8'), marker(12, '8', ABORT), marker(13, '7', ABORT), data(14, '9')];
    const kept = filterAbortedMessages({
      messages,
      abortedTransactions: [
        { producerId: '8', firstOffset: '4' },
        { producerId: '7', firstOffset: '2' },
      ],
    });
    expect(offsets(kept)).toEqual([14]);
  });

  it('keeps the committed transactions of a producer between its aborted ones', () => {
    const messages = [data(0, '7'), marker(1, '7', ABORT), data(2, '7'), marker(3, '7', COMMIT), data(4, '7'), marker(5, '7', ABORT), data(6, '7')];
    const kept = filterAbortedMessages({
      messages,
      abortedTransactions: [
        { producerId: '7', firstOffset: '4' },
        { producerId: '7', firstOffset: '0' },
      ],
    });
    expect(offsets(kept)).toEqual([2, 6]);
  });

  it('does not take a data record with a four-byte zero key for an abort marker', () => {
    const messages = [data(0, '7'), data(1, '7', ABORT), data(2, '7'), marker(3, '7', ABORT)];
    const kept = filterAbortedMessages({ messages, abortedTransactions: [{ producerId: '7', firstOffset: '0' }] });
    expect(offsets(kept)).toEqual([]);
  });
});
