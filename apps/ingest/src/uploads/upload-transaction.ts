import type { LogRecord, TransactionalLog } from '@meridian/domain';
import type { CommandPosition, TaskLog } from '../commands/handlers.ts';
import { PointBatchSender, type PointBatchSenderOptions } from './batch-sender.ts';

/**
 * An upload's Kafka transaction, the one way every upload path writes (one upload alone, or a
 * group of small ones): the command's offset, the point batches through one sender, the end
 * records and the commit. commands/handlers.ts' inTransaction is for work that sends a few
 * records; an upload's transaction differs in two ways, kept here once: the offset joins before
 * the body is read, and undoing it discards what the sender still holds.
 */
export type UploadTransaction = {
  /** Sends the upload's point batches, several per request. */
  readonly sender: PointBatchSender;
  /**
   * The command's offset joining the transaction, asked for at the open: two round trips off the
   * command's path, and the transaction holds the tasks partition (whose committed end the api's
   * fold waits for before its 202) only from its last send to its commit. Await it before the
   * first batch is sent.
   */
  readonly offsetJoined: Promise<void>;
  /** Whether the commit was asked for: a failure after that may have committed all the same. */
  readonly committing: boolean;
  /** Sends what the sender holds with `tail` (the seals, the task events) in one request, then commits. */
  finish(tail: readonly LogRecord[]): Promise<void>;
  /** Aborts a transaction whose upload was decided invalid: nothing of it is written. Throws Kafka's trouble. */
  abort(): Promise<void>;
  /** After trouble: nothing of the transaction is left, and nothing is thrown (the caller has the error). */
  undo(): Promise<void>;
};

/** Opens an upload's transaction on the partition's producer; `at` is the command whose offset it commits (a group's last). */
export async function openUploadTransaction(
  producer: TransactionalLog,
  tasks: Pick<TaskLog, 'commitCommand'>,
  at: CommandPosition,
  senderOptions: PointBatchSenderOptions,
): Promise<UploadTransaction> {
  const tx = await producer.transaction();
  const offsetJoined = tasks.commitCommand(tx, at);
  offsetJoined.catch(() => undefined); // awaited by the caller; observed here should the body fail first
  const sender = new PointBatchSender(tx, senderOptions);
  let committing = false;
  return {
    sender,
    offsetJoined,
    get committing() {
      return committing;
    },
    async finish(tail) {
      await sender.flush(tail);
      committing = true;
      await tx.commit();
    },
    async abort() {
      await sender.discard();
      await tx.abort();
    },
    async undo() {
      await sender.discard();
      await offsetJoined.catch(() => undefined); // a transaction is aborted after its last request ends
      if (tx.isActive()) await tx.abort().catch(() => undefined);
    },
  };
}
