import { removeLivePartials } from './output-file.ts';

/** A command stopped by Ctrl-C (SIGINT) or SIGTERM, after it tidied up; `hint` says how to go on. */
export class Interrupted extends Error {
  constructor(hint: string) {
    super(`interrupted${hint ? `; ${hint}` : ''}`);
  }
}

export type Interruption = {
  /** Aborted at the first SIGINT or SIGTERM: requests stop, commands tidy up and throw Interrupted. */
  readonly signal: AbortSignal;
  /** The signal that came, if one did. */
  readonly received: () => NodeJS.Signals | null;
  /** Removes the handlers and ends the process by the signal itself, as a shell expects of an interrupted program. */
  reraise(): void;
};

/**
 * The first SIGINT or SIGTERM aborts the command's signal so that it can remove its partial files
 * and say how to resume; a second one removes them and exits at once (130) without waiting.
 */
export function catchInterrupts(stderr: NodeJS.WritableStream): Interruption {
  const controller = new AbortController();
  let received: NodeJS.Signals | null = null;
  const handler = (sig: NodeJS.Signals) => {
    if (received !== null) {
      removeLivePartials();
      stderr.write('meridian: stopped\n');
      process.exit(130);
    }
    received = sig;
    controller.abort(new Error(`${sig}`));
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  return {
    signal: controller.signal,
    received: () => received,
    reraise() {
      process.off('SIGINT', handler);
      process.off('SIGTERM', handler);
      if (received !== null) process.kill(process.pid, received);
    },
  };
}

/** Throws Interrupted (with the hint) when the signal was aborted; else rethrows the error. */
export function rethrowIfInterrupted(signal: AbortSignal | undefined, error: unknown, hint: string): never {
  if (signal?.aborted) throw new Interrupted(hint);
  throw error;
}
