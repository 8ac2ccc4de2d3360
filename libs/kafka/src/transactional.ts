import type { Kafka, Producer, Transaction } from 'kafkajs';
import { createProducer } from './client.ts';

/** A transaction cut short by Kafka, after which the producer was replaced: retriable, the command runs again. */
export class TransactionInterrupted extends Error {
  // Named, as kafkajs' errors are: @meridian/retry's classifier tells the log's failures by name.
  override readonly name: string = 'TransactionInterrupted';
  readonly retriable = true;
}

/**
 * A commit that failed on its way (the coordinator broker died, the connection broke): the
 * transaction may still be committed by the coordinator, or aborted. The command runs again
 * once the caller has re-read what the transaction would have written.
 */
export class TransactionOutcomeUnknown extends TransactionInterrupted {
  override readonly name = 'TransactionOutcomeUnknown';
  constructor(transactionalId: string, cause: unknown) {
    super(`the commit of transaction ${transactionalId} failed on its way; its outcome is unknown: ${messageOf(cause)}`, { cause });
  }
}

/**
 * Another producer took the transactional id (a worker that was given this partition after a
 * rebalance): this transaction is aborted, and the producer can never be used again (kafkajs
 * calls the error non-retriable, and a consumer would crash on it).
 */
export class ProducerFenced extends TransactionInterrupted {
  override readonly name = 'ProducerFenced';
  constructor(transactionalId: string, cause: unknown) {
    super(`the producer of ${transactionalId} was fenced by a newer one; the transaction was aborted: ${messageOf(cause)}`, { cause });
  }
}

const FENCED = new Set(['INVALID_PRODUCER_EPOCH', 'PRODUCER_FENCED']);

function messageOf(error: unknown): string {
  return (error as Error)?.message ?? String(error);
}

/** Whether kafkajs' error is, or wraps, a fencing answer. */
function isFenced(error: unknown, depth = 0): boolean {
  if (error === null || typeof error !== 'object' || depth > 8) return false;
  const e = error as { type?: unknown; cause?: unknown; originalError?: unknown };
  return FENCED.has(String(e.type)) || isFenced(e.cause, depth + 1) || isFenced(e.originalError, depth + 1);
}

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
 * transaction is then settled) and after re-reading what it would have written. A producer
 * fenced by a newer one with the same id (any step answering INVALID_PRODUCER_EPOCH or
 * PRODUCER_FENCED) is replaced too, and the step throws ProducerFenced.
 */
export class TransactionalProducer {
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
    /** Runs one step of the transaction; a fenced producer is replaced whatever the step. */
    const step = async <T>(run: () => Promise<T>, onFailure: 'rethrow' | 'replace' | 'outcome unknown'): Promise<T> => {
      try {
        return await run();
      } catch (error) {
        if (isFenced(error)) {
          await this.replace(producer);
          throw new ProducerFenced(this.transactionalId, error);
        }
        if (onFailure === 'rethrow') throw error;
        await this.replace(producer);
        throw onFailure === 'outcome unknown' ? new TransactionOutcomeUnknown(this.transactionalId, error) : error;
      }
    };
    const tx = await step(() => producer.transaction(), 'replace');
    return {
      send: (record) => step(() => tx.send(record), 'rethrow'),
      sendBatch: (batch) => step(() => tx.sendBatch(batch), 'rethrow'),
      sendOffsets: (offsets) => step(() => tx.sendOffsets(offsets), 'rethrow'),
      isActive: () => tx.isActive(),
      commit: () => step(() => tx.commit(), 'outcome unknown'),
      // An abort that failed leaves nothing committed: the next producer's fencing aborts it.
      abort: () => step(() => tx.abort(), 'replace'),
    };
  }

  /** Connects (InitProducerId), which fences a predecessor's open transaction and ends it first. */
  async ready(): Promise<void> {
    await this.producer();
  }

  async disconnect(): Promise<void> {
    const current = this.current;
    this.current = null;
    if (current)
      await current.then(
        (p) => p.disconnect(),
        () => undefined,
      );
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
