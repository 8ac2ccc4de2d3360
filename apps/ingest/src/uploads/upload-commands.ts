import { uploadFailedUnread, type MetricsUploadRequested } from '@meridian/domain';
import { TransactionInterrupted } from '@meridian/kafka';
import { isKafkaTransient, retry, RETRY_POLICIES } from '@meridian/retry';
import type { CommandHandler, CommandPosition } from '../commands/handlers.ts';
import { removeStaged } from '../staging.ts';
import { failTask, runUploadJob, type UploadJobDeps } from './upload-job.ts';

export type UploadCommandsDeps = Omit<UploadJobDeps, 'heartbeat'> & {
  /** Runs of one upload that stop on storage or network trouble before its task fails (MERIDIAN_UPLOAD_ATTEMPTS). */
  readonly attempts: number;
  /** Sets a command aside on the dead-letter topic, as it came. */
  readonly deadLetter: (at: CommandPosition, value: Buffer | null, reason: string) => Promise<void>;
};

/** The handler of MetricsUploadRequested: one upload, its task ended in the log, then its staged bytes removed. */
export function uploadCommands(deps: UploadCommandsDeps): CommandHandler<MetricsUploadRequested> {
  const { logger } = deps;
  // Kafka's trouble, a commit whose outcome is unknown and a fenced producer go back to the
  // consumer: the command runs again after it has re-read the tasks log (never a blind second run).
  const redeliver = (error: unknown) => isKafkaTransient(error) || error instanceof TransactionInterrupted;
  /** The task has ended in the log (its points or its failure): the claim check is spent. */
  const ended = async (cmd: MetricsUploadRequested) => {
    if (cmd.staged_object !== null) await removeStaged(deps.storage, cmd.staged_object, logger);
  };
  return {
    /** Storage trouble is retried here, within the run; Kafka's passes up, and kafkajs redelivers the command. */
    async run(cmd, { at, producer, heartbeat, value }) {
      let attempts = 0;
      try {
        await retry((n) => { attempts = n; return runUploadJob(cmd, at, producer, { ...deps, heartbeat }); }, {
          ...RETRY_POLICIES.upload,
          attempts: deps.attempts,
          // Storage or network trouble passes; an accepted upload is not failed for it at once.
          retriable: (error) => !redeliver(error),
          onRetry: (error, attempt, delay) => logger.warn({ err: error, task_id: cmd.task_id, attempt, retry_in_ms: delay }, 'upload attempt failed; retrying'),
          wait: (ms) => sleepWithHeartbeat(ms, heartbeat),
        });
      } catch (error) {
        if (redeliver(error)) throw error;
        logger.error({ err: error, task_id: cmd.task_id, attempts }, 'upload failed after every attempt');
        await deps.deadLetter(at, value, (error as Error).message);
        await failTask(producer, deps, at, cmd, uploadFailedUnread(`the upload could not be processed: ${(error as Error).message}`));
      }
      await ended(cmd);
    },
    async refuse(cmd, { at, producer }, reason) {
      await failTask(producer, deps, at, cmd, uploadFailedUnread(reason));
      await ended(cmd);
    },
  };
}

async function sleepWithHeartbeat(ms: number, heartbeat: () => Promise<void>): Promise<void> {
  for (let left = ms; left > 0; left -= 1000) {
    await new Promise((r) => setTimeout(r, Math.min(1000, left)));
    await heartbeat();
  }
}
