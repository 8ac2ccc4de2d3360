import type { AccountEvent, AccountsState } from '@meridian/domain';

/** What the account routes need: the current state and a way to run a decision against it. */
export interface AccountsCommands {
  readonly state: AccountsState;
  execute(userName: string, decide: (state: AccountsState) => AccountEvent[]): Promise<AccountEvent[]>;
}
