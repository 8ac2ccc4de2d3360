import { afterEach, describe, expect, it, vi } from 'vitest';
import { READS_STAGED_UPLOADS } from '@meridian/domain';
import { createLogger } from '@meridian/observability';
import { GATE_ANSWER_MS, stagingGate } from './staging-gate.ts';

const logger = createLogger({ name: 't', level: 'silent' });

/** A projector group whose answer the test sets, counting the questions. */
function group(answer: () => Promise<boolean>) {
  const asked: Array<[string, string]> = [];
  return {
    asked,
    log: {
      groupAdvertises: (groupId: string, capability: string) => {
        asked.push([groupId, capability]);
        return answer();
      },
    },
  };
}

describe('staging gate', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('stages nothing below MERIDIAN_STAGE_MIN_BYTES, and does not ask', async () => {
    const g = group(() => Promise.resolve(true));
    expect(await stagingGate('on', 1000, g.log, 'p', logger)(999)).toBe(false);
    expect(await stagingGate('auto', 1000, g.log, 'p', logger)(999)).toBe(false);
    expect(g.asked).toEqual([]);
  });

  it('on: stages an upload large enough without asking', async () => {
    const g = group(() => Promise.resolve(false));
    expect(await stagingGate('on', 1000, g.log, 'p', logger)(1000)).toBe(true);
    expect(g.asked).toEqual([]);
  });

  it('auto: asks the projector group for its capability, keeps the answer for GATE_ANSWER_MS, then asks again', async () => {
    vi.useFakeTimers();
    let yes = true;
    const g = group(() => Promise.resolve(yes));
    const mayStage = stagingGate('auto', 1000, g.log, 'meridian.ingest-projector', logger);
    expect(await Promise.all([mayStage(1000), mayStage(5000)])).toEqual([true, true]);
    expect(g.asked).toEqual([['meridian.ingest-projector', READS_STAGED_UPLOADS]]);
    yes = false; // a member of an older release joined
    vi.advanceTimersByTime(GATE_ANSWER_MS - 1);
    expect(await mayStage(1000)).toBe(true);
    vi.advanceTimersByTime(1);
    expect(await mayStage(1000)).toBe(false);
    expect(g.asked).toHaveLength(2);
  });

  it('auto: a question that fails answers no (the upload is projected after its commit)', async () => {
    const g = group(() => Promise.reject(new Error('coordinator not available')));
    expect(await stagingGate('auto', 1000, g.log, 'p', logger)(1000)).toBe(false);
  });
});
