import type { Kafka, Producer, Transaction } from 'kafkajs';
import { createProducer } from './client.ts';

/**
 * A commit that failed on its way (the coordinator broker died, the connection broke): the
 * transaction may still be committed by the coordinator, or aborted. Retriable: the command runs
 * again once the caller has re-read what the transaction would have written.
 */
export class TransactionOutcomeUnknown extends Error {
  override readonly name = 'TransactionOutcomeUnknown';
  readonly retriable = true;
  constructor(transactionalId: string, cause: unknown) {
    super(`the commit of transaction ${transactionalId} failed on its way; its outcome is unknown: ${(cause as Error)?.message ?? String(cause)}`, { cause });
  }
}

/** What a command handler needs of Kafka to end a command: transactions, begun one at a time. */
export type Transactions = { transaction(): Promise<Transaction> };

/**
 * One transactional id's producer, replaced after a transaction that did not end cleanly.
 *
 * kafkajs (2.2.4) sends a transaction's EndTxn once, without a retry: when the coordinator
 * broker dies during commit() or abort(), the producer stays COMMITTING or ABORTING and every
 * later transaction() throws (kafkajs issues #1416, #1355). The cure upstream advises is a new
 * producer: its InitProducerId under the same transactional id bumps the epoch, and the
 * coordinator (moved to a live broker) completes or aborts the open transaction before it
 * answers. So a failed commit, abort or begin disconnects the producer, and the next
 * transaction() starts on a new one. The failure is rethrown, a commit's as
 * TransactionOutcomeUnknown: the caller runs the command again after ready() (the old
 * transaction is then settled) and after re-reading what it would have written.
 */
export class TransactionalProducer implements Transactions {
  private current: Promise<Producer> | null = null;
  private replacedCount = 0;
  private readonly make: () => Producer;
  readonly transactionalId: string;

  constructor(kafka: Kafka, transactionalId: string, make: () => Producer = () => createProducer(kafka, { transactionalId })) {
    this.transactionalId = transactionalId;
    this.make = make;
  }

  /** How many times the producer was replaced after a failed transaction. */
  get replaced(): number {
    return this.replacedCount;
  }

  async transaction(): Promise<Transaction> {
    const producer = await this.producer();
    let tx: Transaction;
    try {
      tx = await producer.transaction();
    } catch (error) {
      await this.replace(producer);
      throw error;
    }
    const ending = async (end: () => Promise<void>, outcomeUnknown: boolean) => {
      try {
        await end();
      } catch (error) {
        await this.replace(producer);
        throw outcomeUnknown ? new TransactionOutcomeUnknown(this.transactionalId, error) : error;
      }
    };
    return {
      send: (record) => tx.send(record),
      sendBatch: (batch) => tx.sendBatch(batch),
      sendOffsets: (offsets) => tx.sendOffsets(offsets),
      isActive: () => tx.isActive(),
      commit: () => ending(() => tx.commit(), true),
      // An abort that failed leaves nothing committed: the next producer's fencing aborts it.
      abort: () => ending(() => tx.abort(), false),
    };
  }

  /** Connects (InitProducerId), which fences a predecessor's open transaction and ends it first. */
  async ready(): Promise<void> {
    await this.producer();
  }

  async disconnect(): Promise<void> {
    const current = this.current;
    this.current = null;
    if (current) await current.then((p) => p.disconnect(), () => undefined);
  }

  /** Connected on first use; a failed connect is not kept, so the next call tries again. */
  private producer(): Promise<Producer> {
    if (!this.current) {
      const producer = this.make();
      const connected = producer.connect().then(() => producer);
      connected.catch(() => {
        if (this.current === connected) this.current = null;
      });
      this.current = connected;
    }
    return this.current;
  }

  /** Drops a broken producer (once, if two callers saw it fail) and disconnects it, best effort. */
  private async replace(broken: Producer): Promise<void> {
    const current = this.current;
    if (!current || (await current.catch(() => null)) !== broken) return;
    this.current = null;
    this.replacedCount++;
    await broken.disconnect().catch(() => undefined);
  }
}
