import { blobKeyOf } from '@meridian/domain';
import type { Logger } from '@meridian/observability';
import { commandFailure } from '@meridian/retry';
import { describe, expect, it } from 'vitest';
import type { BlobStore } from '../blob-store.ts';
import { ClaimTooOldError, claimsOfTask, promoteUnderClaim } from './blobs.ts';

const SHA = 'ab'.repeat(32);
/** Every claim key of task-1 on the blob: one per run (and per claim pass) of it. */
const CLAIMS = claimsOfTask(SHA, 'task-1');
const TARGET = { sha256Hex: SHA, taskId: 'task-1', stagedKey: 'staging/f1', size: 3 };

/** A bucket holding the staged bytes; `failRemovals` makes removals throw (storage unreachable); `slowLooks` delays that many looks. */
function bucket() {
  const keys = new Set(['staging/f1']);
  const state = { puts: [] as string[], failRemovals: false, slowLooks: 0, slowLookMs: 0 };
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
      state.puts.push(key);
      keys.add(key);
    },
    list: async (prefix) => [...keys].filter((key) => key.startsWith(prefix)).map((key) => ({ key, writtenAtMs: Date.now() })),
    remove: async (key) => {
      if (state.failRemovals) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
      keys.delete(key);
    },
  };
  const claims = () => [...keys].filter((key) => key.startsWith(CLAIMS));
  return { keys, state, store, claims };
}

function recordingLogger() {
  const warnings: string[] = [];
  const logger = { warn: (_obj: unknown, msg: string) => void warnings.push(msg) } as unknown as Logger;
  return { warnings, logger };
}

describe("promoteUnderClaim (a definition's claim, look and commit)", () => {
  it('claims before the look and releases the claim after the commit', async () => {
    const { keys, store, claims } = bucket();
    const seen: unknown[] = [];
    const how = await promoteUnderClaim(store, TARGET, { claimTtlMs: 60_000, logger: recordingLogger().logger }, async (committing) => {
      seen.push(claims().length, keys.has(blobKeyOf(SHA)));
      committing();
    });
    expect(how).toBe('copied');
    expect(seen).toEqual([1, true]);
    expect(claims()).toEqual([]);
  });

  it('a failed claim removal after the commit does not fail the definition: the commit stands, run once, the claim left to the collector', async () => {
    const { state, store, claims } = bucket();
    const { warnings, logger } = recordingLogger();
    let commits = 0;
    const how = await promoteUnderClaim(store, TARGET, { claimTtlMs: 60_000, logger }, async (committing) => {
      committing();
      commits += 1;
      state.failRemovals = true; // storage goes away right after the commit
    });
    expect(how).toBe('copied');
    expect(commits).toBe(1);
    expect(claims()).toHaveLength(1);
    expect(warnings).toEqual(['blob claim not removed; a blob collector drops it once its task has finished']);
  });

  it('a commit that failed before committing throws its own error, even when the claim cannot be removed', async () => {
    const { state, store } = bucket();
    const { logger } = recordingLogger();
    state.failRemovals = true;
    await expect(
      promoteUnderClaim(store, TARGET, { claimTtlMs: 60_000, logger }, async () => {
        throw new Error('the transaction could not start');
      }),
    ).rejects.toThrow('the transaction could not start');
  });

  // Review 2, finding 7: a collector's TTL cleanup that listed the first pass's claim as old must not delete the claim the commit follows.
  it('a look that ended past half of the claim TTL claims again under a new key, removes the old one, and looks again before committing', async () => {
    const { state, store, claims } = bucket();
    state.slowLooks = 1;
    state.slowLookMs = 200; // far past half of the TTL below; the second look is not delayed
    let commits = 0;
    const atCommit: string[][] = [];
    await promoteUnderClaim(store, TARGET, { claimTtlMs: 100, logger: recordingLogger().logger }, async (committing) => {
      atCommit.push(claims());
      committing();
      commits += 1;
    });
    expect(state.puts).toHaveLength(2);
    expect(new Set(state.puts).size).toBe(2);
    expect(atCommit).toEqual([[state.puts[1]]]); // only the new pass's claim: the first one is gone
    expect(commits).toBe(1);
  });

  // Review 2, finding 1: W1 was kicked from the group while running the task, W2 reruns it; W1's
  // transaction is fenced before it commits, and W1 releases its claim while W2 is still to commit.
  it("two runs of one task: the run that fails before committing releases its own claim, not the other run's", async () => {
    const { store, claims } = bucket();
    const rules = { claimTtlMs: 60_000, logger: recordingLogger().logger };
    let w1Done!: () => void;
    const w1HasFailed = new Promise<void>((r) => (w1Done = r));
    const claimsAtW2Commit: number[] = [];
    let w2: Promise<'copied' | 'present'> | null = null;
    const w1 = promoteUnderClaim(store, TARGET, rules, async () => {
      // W1 has claimed and copied the bytes; W2 claims and looks (the bytes present) before W1's commit is fenced.
      await new Promise<void>((looked) => {
        w2 = promoteUnderClaim(store, TARGET, rules, async (committing) => {
          looked();
          await w1HasFailed;
          claimsAtW2Commit.push(claims().length); // what a collector's check would see now
          committing();
        });
      });
      throw new Error('the producer is fenced: another worker runs this task');
    }).finally(w1Done);
    await expect(w1).rejects.toThrow('fenced');
    expect(await w2!).toBe('present');
    expect(claimsAtW2Commit).toEqual([1]);
    expect(claims()).toEqual([]);
  });

  // Review 3, finding 5: a definition paused between its look and its commit, past the claim TTL,
  // would commit after a collector deleted its claim (taken for a dead one's) and removed the blob.
  it('a commit past half of the claim TTL after the claim is not made: a retriable error, the claim released; the retry claims and looks again', async () => {
    const { keys, store, claims } = bucket();
    const rules = { claimTtlMs: 1_000, logger: recordingLogger().logger };
    let commits = 0;
    const paused = promoteUnderClaim(store, TARGET, rules, async (committing) => {
      await new Promise((r) => setTimeout(r, 600)); // at least this long: past half of the TTL
      committing();
      commits += 1;
    });
    const error = await paused.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ClaimTooOldError);
    expect(commandFailure(error)).toBe('retry'); // runCommand runs the definition again, within its attempts
    expect(commits).toBe(0);
    expect(claims()).toEqual([]);
    keys.delete(blobKeyOf(SHA)); // a collector removed the blob meanwhile: the retry's look copies it again
    const seen: boolean[] = [];
    expect(
      await promoteUnderClaim(store, TARGET, rules, async (committing) => {
        seen.push(keys.has(blobKeyOf(SHA)));
        committing();
        commits += 1;
      }),
    ).toBe('copied');
    expect(seen).toEqual([true]);
    expect(commits).toBe(1);
  });
});
