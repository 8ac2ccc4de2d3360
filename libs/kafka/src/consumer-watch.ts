import type { Consumer } from 'kafkajs';

/** Where a group consumer stands, as its kafkajs events tell. */
export type ConsumerState =
  | { readonly kind: 'starting' }
  | { readonly kind: 'joined' }
  /** Crashed on an error kafkajs retries: it restarts the consumer itself. */
  | { readonly kind: 'restarting'; readonly error: string }
  /** Crashed on an error kafkajs does not retry (restart=false): nothing in the process runs it again. */
  | { readonly kind: 'failed'; readonly error: string };

export type ConsumerEvent = { readonly type: 'joined' } | { readonly type: 'crashed'; readonly error: string; readonly restart: boolean };

/** The next state after an event. A failure is final: a later event cannot make it look healthy. */
export function nextConsumerState(state: ConsumerState, event: ConsumerEvent): ConsumerState {
  if (state.kind === 'failed') return state;
  switch (event.type) {
    case 'joined':
      return { kind: 'joined' };
    case 'crashed':
      return event.restart ? { kind: 'restarting', error: event.error } : { kind: 'failed', error: event.error };
  }
}

/** Why a consumer is not serving, or null when it has joined its group. */
export function notServing(name: string, state: ConsumerState): string | null {
  switch (state.kind) {
    case 'joined':
      return null;
    case 'starting':
      return `${name} has not joined its consumer group yet`;
    case 'restarting':
      return `${name} crashed and is restarting: ${state.error}`;
    case 'failed':
      return `${name} failed for good: ${state.error}`;
  }
}

/**
 * Follows one group consumer's events: joined (readiness), crashed for good (liveness).
 * `failed` settles with the reason the first time the consumer fails. kafkajs stops a consumer
 * only when asked (stop, disconnect) or on a crash, whose CRASH event says whether it restarts,
 * so STOP itself tells nothing more.
 */
export class ConsumerWatch {
  readonly name: string;
  readonly failed: Promise<string>;
  private current: ConsumerState = { kind: 'starting' };
  private onFailed!: (reason: string) => void;

  constructor(name: string, consumer: Consumer) {
    this.name = name;
    this.failed = new Promise((resolve) => {
      this.onFailed = resolve;
    });
    const { GROUP_JOIN, CRASH } = consumer.events;
    consumer.on(GROUP_JOIN, () => this.apply({ type: 'joined' }));
    consumer.on(CRASH, (e) => this.apply({ type: 'crashed', error: errorText(e.payload.error), restart: e.payload.restart }));
  }

  get state(): ConsumerState {
    return this.current;
  }

  private apply(event: ConsumerEvent): void {
    const before = this.current;
    this.current = nextConsumerState(before, event);
    if (this.current.kind === 'failed' && before.kind !== 'failed') this.onFailed(notServing(this.name, this.current) ?? this.name);
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
