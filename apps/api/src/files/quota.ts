import type { TasksState } from '@meridian/domain';

/** A user's file definitions held in this process's tasks memory that have not failed: they count until the catalog shows their file. */
export function definitionsInFlight(tasks: TasksState, userName: string): Array<{ file_id: string; bytes: number; succeeded: boolean }> {
  const found: Array<{ file_id: string; bytes: number; succeeded: boolean }> = [];
  for (const task of tasks.values()) {
    if (task.kind !== 'file_definition' || task.user_name !== userName || task.status === 'failed' || !task.file_id) continue;
    found.push({ file_id: task.file_id, bytes: task.payload_bytes ?? 0, succeeded: task.status === 'succeeded' });
  }
  return found;
}

/**
 * File definitions of a user that count against the quota but are not in the catalog yet:
 * accepted (queued, running, or succeeded with the catalog not caught up), not failed.
 * `defined` holds the ids the catalog knows (live or deleted).
 */
export function pendingDefinitions(inFlight: ReturnType<typeof definitionsInFlight>, defined: ReadonlySet<string>): { bytes: number; count: number } {
  let bytes = 0;
  let count = 0;
  for (const d of inFlight) {
    if (defined.has(d.file_id)) continue;
    bytes += d.bytes;
    count++;
  }
  return { bytes, count };
}

/**
 * Bytes this api process has staged for definitions whose commands are not yet folded: two
 * uploads of one user that run at the same time cannot both spend the same remaining quota.
 * Check and reserve happen in one synchronous step once a file's size is known.
 */
export class QuotaReservations {
  private readonly byUser = new Map<string, Map<symbol, number>>();

  reserved(userName: string): number {
    let sum = 0;
    for (const n of this.byUser.get(userName)?.values() ?? []) sum += n;
    return sum;
  }

  /** How many definitions of the user hold a reservation (they count against the files-per-user cap too). */
  count(userName: string): number {
    return this.byUser.get(userName)?.size ?? 0;
  }

  reserve(userName: string, bytes: number): () => void {
    const token = Symbol(userName);
    let mine = this.byUser.get(userName);
    if (!mine) this.byUser.set(userName, (mine = new Map()));
    mine.set(token, bytes);
    return () => {
      mine.delete(token);
      if (mine.size === 0 && this.byUser.get(userName) === mine) this.byUser.delete(userName);
    };
  }
}
