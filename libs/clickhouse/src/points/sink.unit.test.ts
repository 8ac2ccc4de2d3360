import { describe, expect, it } from 'vitest';
import { refusedBeforeWriting } from './sink.ts';

describe('refusedBeforeWriting', () => {
  it('knows the quorum refusals that store nothing, and only those', () => {
    expect(refusedBeforeWriting(new Error('Code: 286, e.displayText() = DB::Exception: Another quorum insert has been already started'))).toBe(true);
    expect(refusedBeforeWriting(new Error('Code: 285, e.displayText() = DB::Exception: Number of alive replicas (1) is less than requested quorum (2)'))).toBe(
      true,
    );
    expect(refusedBeforeWriting(new Error('Code: 319, e.displayText() = DB::Exception: Unknown status, client must retry. Reason: Connection loss'))).toBe(
      false,
    );
    expect(refusedBeforeWriting(Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }))).toBe(false);
    expect(refusedBeforeWriting(new Error('Code: 2860, not a quorum error'))).toBe(false);
    // Seen on the cluster: the points part was stored, the catalog view's quorum refused.
    expect(
      refusedBeforeWriting(
        new Error(
          'Code: 286, e.displayText() = DB::Exception: Quorum for previous write has not been satisfied yet. Status: version: 1\npart_name: all_138_138_0\n: while pushing to view meridian.metric_catalog, e.what() = DB::Exception',
        ),
      ),
    ).toBe(false);
  });
});
