import { existsSync, rmSync } from 'node:fs';
import { link, rename, rm, stat } from 'node:fs/promises';

/**
 * The one rule for every file the CLI writes (download -o, files get): the bytes go to
 * TARGET.meridian-partial beside the target and are renamed into place only once complete, so a
 * failed or interrupted command never truncates or half-writes the target. An existing target is
 * refused unless --force; the refusal comes before any request when the name is known.
 */
export class OutputExists extends Error {
  constructor(target: string) {
    super(`${target} already exists; pass --force to replace it`);
  }
}

export const partialPath = (target: string) => `${target}.meridian-partial`;

/** Partial files of this process, removed synchronously when it is made to stop at once (a second Ctrl-C). */
const live = new Set<string>();

export function removeLivePartials(): void {
  for (const path of live) rmSync(path, { force: true });
  live.clear();
}

/** Throws OutputExists when the target is there and `force` is not given. */
export function assertWritable(target: string, force: boolean): void {
  if (!force && existsSync(target)) throw new OutputExists(target);
}

export type OutputFile = {
  readonly target: string;
  readonly partial: string;
  /** Moves the complete partial file onto the target (without --force: only if the target still does not exist). */
  commit(): Promise<void>;
  /** Removes the partial file (a failure with nothing worth keeping). */
  discard(): Promise<void>;
  /** Leaves the partial file for a later --resume. */
  keep(): void;
};

export function outputFile(target: string, force: boolean): OutputFile {
  assertWritable(target, force);
  const partial = partialPath(target);
  live.add(partial);
  return {
    target,
    partial,
    async commit() {
      if (force) {
        await rename(partial, target);
      } else {
        // link() fails with EEXIST if the target appeared while the bytes came: nothing is replaced.
        try {
          await link(partial, target);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw new OutputExists(target);
          // A file system without hard links: the existence check just before is the best left.
          if ((await stat(target).catch(() => null)) !== null) throw new OutputExists(target);
          await rename(partial, target);
          live.delete(partial);
          return;
        }
        await rm(partial, { force: true });
      }
      live.delete(partial);
    },
    async discard() {
      await rm(partial, { force: true });
      live.delete(partial);
    },
    keep() {
      live.delete(partial);
    },
  };
}
