import { canWrite, type UserRecord } from '@meridian/domain';

/**
 * Whether an upload's user may write each metric, decided once per metric. Entitlements
 * granted just before the upload must count, but reading the accounts log to its end costs
 * round trips: only a metric the local fold refuses waits for that read, and the read is done
 * at most once per upload.
 */
export class WriteAccess {
  private readonly decided = new Map<string, boolean>();
  private readonly userName: string;
  private readonly user: (name: string) => UserRecord | undefined;
  private readonly syncAccounts: () => Promise<void>;
  private synced = false;

  constructor(userName: string, user: (name: string) => UserRecord | undefined, syncAccounts: () => Promise<void>) {
    this.userName = userName;
    this.user = user;
    this.syncAccounts = syncAccounts;
  }

  /** The decision already made for this metric, if any: the per-point path, without a promise. */
  known(metric: string): boolean | undefined {
    return this.decided.get(metric);
  }

  async decide(metric: string): Promise<boolean> {
    let ok = this.allowed(metric);
    if (!ok && !this.synced) {
      await this.syncAccounts();
      this.synced = true;
      ok = this.allowed(metric);
    }
    this.decided.set(metric, ok);
    return ok;
  }

  /** The metrics this upload was allowed to write, sorted. */
  writtenMetrics(): string[] {
    return [...this.decided].filter(([, ok]) => ok).map(([m]) => m).sort();
  }

  private allowed(metric: string): boolean {
    const user = this.user(this.userName);
    return user !== undefined && canWrite(user, metric);
  }
}
