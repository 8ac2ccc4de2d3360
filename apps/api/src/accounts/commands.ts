import type { AccountEvent, AccountsState } from '@meridian/domain';

/** What the account routes need: the current state and a way to run a decision against it. */
export interface AccountsCommands {
  readonly state: AccountsState;
  execute(userName: string, decide: (state: AccountsState) => AccountEvent[]): Promise<AccountEvent[]>;
  /** Users' file storage: bytes of live files and the quota that applies to them (shown by GET /users when given); one read for all. */
  readonly fileUsage?: (userNames: readonly string[]) => Promise<ReadonlyMap<string, FileUsage>>;
}

export type FileUsage = { readonly bytes_used: number; readonly quota_bytes: number };
