import { describe, expect, it } from 'vitest';
import { checked, stageNames, taskDigest } from './stage-parts.ts';
import { LIVE_STAGE_TARGETS } from './stage.ts';

describe('stage names', () => {
  it("a stage is named after its points table, a digest of the task (never the task's text), the attempt and the partition", () => {
    const names = stageNames(LIVE_STAGE_TARGETS);
    const stage = names.tableOf("x'; DROP TABLE points --", '0123456789abcdef', 3);
    expect(stage).toBe(`points_stage_${taskDigest("x'; DROP TABLE points --")}_0123456789abcdef_p3`);
    expect(new RegExp(names.stageTable).test(stage)).toBe(true);
    expect(new RegExp(names.stageTable).test(`${stage}_rest`)).toBe(true);
    expect(stageNames({ ...LIVE_STAGE_TARGETS, points: 'points_g2' }).tableOf('t', '0123456789abcdef', 0)).toMatch(/^points_g2_stage_/);
  });

  it('refuses an attempt, a partition, a table or a share that is not one', () => {
    const names = stageNames(LIVE_STAGE_TARGETS);
    expect(() => names.tableOf('t', 'not-hex', 0)).toThrow('not a stage');
    expect(() => names.tableOf('t', '0123456789abcdef', -1)).toThrow('not a stage');
    expect(() => stageNames({ ...LIVE_STAGE_TARGETS, points: 'points; DROP' })).toThrow('not a points table');
    expect(() => stageNames({ ...LIVE_STAGE_TARGETS, catalog: 'a`b' })).toThrow('not a table name');
    const share = { partition: 0, sealOffset: 9, taskId: 't', attempt: '0123456789abcdef', points: 10, batches: 2 };
    expect(checked(share)).toBe(share);
    expect(() => checked({ ...share, points: 1.5 })).toThrow('not a seal of a staged share');
    expect(() => checked({ ...share, attempt: 'x' })).toThrow('not an attempt id');
  });
});
