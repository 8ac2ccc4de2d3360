import { canWrite, type UserRecord } from '@meridian/domain';

/**
 * Whether an upload's user may write each metric, decided once per metric on the accounts
 * fold. The worker reads the accounts log to its end before it starts the upload
 * (decideStart), so every grant, revocation and disable written before then counts.
 */
export class WriteAccess {
  private readonly decided = new Map<string, boolean>();
  private readonly userName: string;
  private readonly user: (name: string) => UserRecord | undefined;

  constructor(userName: string, user: (name: string) => UserRecord | undefined) {
    this.userName = userName;
    this.user = user;
  }

  mayWrite(metric: string): boolean {
    let ok = this.decided.get(metric);
    if (ok === undefined) {
      const user = this.user(this.userName);
      ok = user !== undefined && user.disabled_at === null && canWrite(user, metric);
      this.decided.set(metric, ok);
    }
    return ok;
  }

  /** The metrics this upload was allowed to write, sorted. */
  writtenMetrics(): string[] {
    return [...this.decided].filter(([, ok]) => ok).map(([m]) => m).sort();
  }
}
