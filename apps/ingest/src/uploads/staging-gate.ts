import { READS_STAGED_UPLOADS } from '@meridian/domain';
import type { Logger } from '@meridian/observability';
import type { EventLog } from '../event-log.ts';

/** How long the projector group's answer holds: a member of an older release that joins is heeded within this. */
export const GATE_ANSWER_MS = 5000;

/**
 * Whether an upload of `bytes` may be staged now: never below MERIDIAN_STAGE_MIN_BYTES (its stage
 * tables would cost more than projecting it after its commit); above, with
 * MERIDIAN_UPLOAD_STAGING=on always, and with auto while every
 * member of the points projector's consumer group advertises that it reads staged uploads (a
 * projector of an older release, during a rolling upgrade or after a rollback, would send a
 * staged batch to the dead-letter topic), asked of the group at most every GATE_ANSWER_MS,
 * one question at a time. A question that fails answers no: the upload is then projected
 * after its commit, as with staging off, which is always correct, only later.
 */
export function stagingGate(
  mode: 'on' | 'auto',
  minBytes: number,
  log: Pick<EventLog, 'groupAdvertises'>,
  projectorGroup: string,
  logger: Logger,
): (bytes: number) => Promise<boolean> {
  if (mode === 'on') return (bytes) => Promise.resolve(bytes >= minBytes);
  let answer: { readonly at: number; readonly staged: Promise<boolean> } | null = null;
  let last: boolean | null = null;
  const ask = async (): Promise<boolean> => {
    const staged = await log.groupAdvertises(projectorGroup, READS_STAGED_UPLOADS).catch((error: unknown) => {
      logger.warn({ err: error, group: projectorGroup }, 'could not ask the projector group whether it reads staged uploads; this upload is not staged');
      return false;
    });
    if (staged !== last)
      logger.info(
        { group: projectorGroup, staged },
        staged
          ? 'every points projector reads staged uploads: large uploads are staged'
          : 'not every points projector is known to read staged uploads: uploads are projected after their commit',
      );
    last = staged;
    return staged;
  };
  return (bytes) => {
    if (bytes < minBytes) return Promise.resolve(false);
    const now = Date.now();
    if (answer === null || now - answer.at >= GATE_ANSWER_MS) answer = { at: now, staged: ask() };
    return answer.staged;
  };
}
