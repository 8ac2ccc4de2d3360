import type { UserRecord } from '../accounts/state.ts';
import type { Task } from './state.ts';

/** What a worker does with a command it has just been handed. */
export type StartDecision =
  | { readonly kind: 'run' }
  /** The task has ended already (a command sent twice): nothing to do. */
  | { readonly kind: 'skip' }
  /** End the task as failed without running it; a command that keeps killing workers is also set aside (dead letter). */
  | { readonly kind: 'fail'; readonly reason: string; readonly deadLetter: boolean };

/**
 * Whether to run a task's command now, decided on the tasks fold and the accounts fold:
 *
 * - a finished task is skipped;
 * - a command whose earlier runs started `maxStarts` times and never ended nor were released
 *   (each one a worker that died on it) fails instead of killing one more worker, so its
 *   partition moves on: no crash loop;
 * - a command of a user who is unknown or disabled now fails: what they queued before being
 *   disabled is not stored.
 *
 * The crash count comes first: a command that kills workers is set aside whoever sent it.
 */
export function decideStart(task: Task | undefined, owner: UserRecord | undefined, maxStarts: number): StartDecision {
  if (task && (task.status === 'succeeded' || task.status === 'failed' || task.result !== null)) return { kind: 'skip' };
  const notStored = task?.kind === 'file_definition' ? 'the file was not stored' : 'the upload was not stored';
  const died = task?.open_runs ?? 0;
  if (died >= maxStarts) return { kind: 'fail', reason: `processing stopped ${died} times; ${notStored}`, deadLetter: true };
  if (owner === undefined || owner.disabled_at !== null) {
    return { kind: 'fail', reason: `the account that sent it is disabled; ${notStored}`, deadLetter: false };
  }
  return { kind: 'run' };
}
