import { blobKeyOf } from '@meridian/domain';
import type { Logger } from '@meridian/observability';
import { describe, expect, it } from 'vitest';
import type { BlobStore } from '../blob-store.ts';
import { claimKeyOf, promoteUnderClaim } from './blobs.ts';

const SHA = 'ab'.repeat(32);
const CLAIM = claimKeyOf(SHA, 'task-1');
const TARGET = { sha256Hex: SHA, taskId: 'task-1', stagedKey: 'staging/f1', size: 3 };

/** A bucket holding the staged bytes; `failRemovals` makes removals throw (storage unreachable); `slowLooks` delays that many looks. */
function bucket() {
  const keys = new Set(['staging/f1']);
  const state = { puts: 0, failRemovals: false, slowLooks: 0, slowLookMs: 0 };
  const store: BlobStore = {
    open: () => Promise.reject(new Error('not used')),
    size: async (key) => {
      if (key === blobKeyOf(SHA) && state.slowLooks > 0) {
        state.slowLooks -= 1;
        await new Promise((r) => setTimeout(r, state.slowLookMs));
      }
      return keys.has(key) ? 3 : null;
    },
    copy: async (_from, to) => void keys.add(to),
    put: async (key) => {
      state.puts += 1;
      keys.add(key);
    },
    list: () => Promise.reject(new Error('not used')),
    remove: async (key) => {
      if (state.failRemovals) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
      keys.delete(key);
    },
  };
  return { keys, state, store };
}

function recordingLogger() {
  const warnings: string[] = [];
  const logger = { warn: (_obj: unknown, msg: string) => void warnings.push(msg) } as unknown as Logger;
  return { warnings, logger };
}

describe('promoteUnderClaim (a definition\'s claim, look and commit)', () => {
  it('claims before the look and releases the claim after the commit', async () => {
    const { keys, store } = bucket();
    const seen: boolean[] = [];
    const how = await promoteUnderClaim(store, TARGET, { claimTtlMs: 60_000, logger: recordingLogger().logger }, async (committing) => {
      seen.push(keys.has(CLAIM), keys.has(blobKeyOf(SHA)));
      committing();
    });
    expect(how).toBe('copied');
    expect(seen).toEqual([true, true]);
    expect(keys.has(CLAIM)).toBe(false);
  });

  it('a failed claim removal after the commit does not fail the definition: the commit stands, run once, the claim left to the collector', async () => {
    const { keys, state, store } = bucket();
    const { warnings, logger } = recordingLogger();
    let commits = 0;
    const how = await promoteUnderClaim(store, TARGET, { claimTtlMs: 60_000, logger }, async (committing) => {
      committing();
      commits += 1;
      state.failRemovals = true; // storage goes away right after the commit
    });
    expect(how).toBe('copied');
    expect(commits).toBe(1);
    expect(keys.has(CLAIM)).toBe(true);
    expect(warnings).toEqual(['blob claim not removed; a blob collector drops it once its task has finished']);
  });

  it('a commit that failed before committing throws its own error, even when the claim cannot be removed', async () => {
    const { state, store } = bucket();
    const { logger } = recordingLogger();
    state.failRemovals = true;
    await expect(promoteUnderClaim(store, TARGET, { claimTtlMs: 60_000, logger }, async () => {
      throw new Error('the transaction could not start');
    })).rejects.toThrow('the transaction could not start');
  });

  it('a look that ended past half of the claim TTL claims and looks again before committing', async () => {
    const { state, store } = bucket();
    state.slowLooks = 1;
    state.slowLookMs = 200; // far past half of the TTL below; the second look is not delayed
    let commits = 0;
    await promoteUnderClaim(store, TARGET, { claimTtlMs: 100, logger: recordingLogger().logger }, async (committing) => {
      committing();
      commits += 1;
    });
    expect(state.puts).toBeGreaterThanOrEqual(2);
    expect(commits).toBe(1);
  });
});
