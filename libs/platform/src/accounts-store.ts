import type { Producer } from 'kafkajs';
import { applyAccountEvent, initialAccounts, type AccountEvent, type AccountsState } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { appendEvents } from '@meridian/kafka';
import { FoldedTopic } from './folded-topic.ts';
import type { Platform } from './platform.ts';

/**
 * Account state for one process: the accounts topic folded into memory and kept current.
 * Commands decide on this state, append their events (acks=all), and return only once this
 * process has applied them, so a caller reads its own writes.
 */
export class AccountsStore extends FoldedTopic<AccountEvent, AccountsState> {
  private readonly codec;
  private readonly accountsTopic: string;

  constructor(platform: Platform, role: string) {
    const codec = createEventCodec<AccountEvent>();
    super(platform, { topic: platform.topics.accounts, role: `${role}-accounts`, codec, initial: initialAccounts, apply: applyAccountEvent });
    this.codec = codec;
    this.accountsTopic = platform.topics.accounts;
  }

  async execute(userName: string, decide: (state: AccountsState) => AccountEvent[], producer: Producer): Promise<AccountEvent[]> {
    const events = decide(this.state);
    await this.waitFor(await appendEvents(producer, this.codec, this.accountsTopic, userName, events));
    return events;
  }
}
