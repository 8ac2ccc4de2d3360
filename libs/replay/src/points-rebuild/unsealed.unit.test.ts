import { describe, expect, it } from 'vitest';
import { OpenUploads } from './unsealed.ts';

describe('open uploads of a rebuild cut in time', () => {
  it('an upload unsealed in any partition is doomed with all its batches; one sealed everywhere is kept', () => {
    const open = new OpenUploads([0, 1]);
    open.batch(0, 'a', 1);
    open.batch(1, 'a', 2);
    open.batch(0, 'b', 3);
    open.batch(0, 'b', 4);
    open.sealed(0, 'a');
    open.sealed(0, 'b');
    expect(open.doomed()).toEqual({ tasks: new Set(['a']), batches: 1 });
    open.sealed(1, 'a');
    expect(open.doomed()).toEqual({ tasks: new Set(), batches: 0 });
  });
});
