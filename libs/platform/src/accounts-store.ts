import { applyAccountEvent, initialAccounts, type AccountEvent, type AccountsState } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { FoldedTopic } from './folded-topic.ts';
import type { Platform } from './platform.ts';

/**
 * Account state for one process: the accounts topic folded into memory and kept current.
 * Commands (FoldedTopic.execute) decide on this state, append their events keyed by user
 * name (acks=all), and return only once this process has applied them. No transaction writes
 * the topic, so reading it to its end is one offsets request (the ingest worker does it per command).
 */
export class AccountsStore extends FoldedTopic<AccountEvent, AccountsState> {
  constructor(platform: Platform, role: string) {
    super(platform, { topic: platform.topics.accounts, role: `${role}-accounts`, codec: createEventCodec<AccountEvent>(), initial: initialAccounts, apply: applyAccountEvent, writtenInTransactions: false });
  }
}
