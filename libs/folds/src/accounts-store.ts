import { accountsCodec, applyAccountEvent, initialAccounts, type AccountEvent, type AccountsState } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { FoldedTopic } from './folded-topic.ts';
import type { FoldContext } from './fold-context.ts';

/**
 * Account state for one process: the accounts topic folded into memory and kept current, started
 * from the newest snapshot plus the tail. Commands (FoldedTopic.execute) decide on this state,
 * append their events keyed by user name (acks=all), and return only once this process has
 * applied them. No transaction writes the topic, so reading it to its end is one offsets request
 * (the ingest worker does it per command). `writesSnapshots`: servers do (any of them may, as the
 * fold has no side effects); a CLI run is too short to.
 */
export class AccountsStore extends FoldedTopic<AccountEvent, AccountsState> {
  constructor(context: FoldContext, role: string, options: { writesSnapshots: boolean }) {
    super(context, {
      topic: context.topics.accounts,
      role: `${role}-accounts`,
      codec: createEventCodec<AccountEvent>(),
      initial: initialAccounts,
      apply: applyAccountEvent,
      writtenInTransactions: false,
      snapshots: { codec: accountsCodec, writes: options.writesSnapshots === true },
    });
  }
}
