import { createRequire } from 'node:module';
import { afterEach, describe, expect, it } from 'vitest';

// The request queue of a kafkajs connection, patched by patches/kafkajs+2.2.4.patch, driven as
// a connection drives it: requests pushed, their answers fulfilled.
const require = createRequire(import.meta.url);
type RequestQueue = {
  throttleCheckTimeoutId: unknown;
  pending: unknown[];
  push(request: { entry: { correlationId: number }; expectResponse: boolean; sendRequest(): void }): void;
  fulfillRequest(response: { correlationId: number; payload: Buffer; size: number }): void;
  maybeThrottle(ms: number): void;
  destroy(): void;
};
const RequestQueue = require('kafkajs/src/network/requestQueue/index.js') as new (options: object) => RequestQueue;

const silent = { debug() {}, info() {}, warn() {}, error() {} };
const queues: RequestQueue[] = [];

function queue(): RequestQueue {
  const q = new RequestQueue({
    maxInFlightRequests: null,
    requestTimeout: 30_000,
    enforceRequestTimeout: false,
    clientId: 'test',
    broker: 'b:1',
    logger: silent,
  });
  queues.push(q);
  return q;
}

/** A request that counts its sends; kafkajs' SocketRequest waits for its answer's entry. */
function request(correlationId: number, sent: number[]) {
  return {
    entry: { correlationId, resolve: () => undefined, reject: () => undefined },
    expectResponse: true,
    sendRequest: () => sent.push(correlationId),
  };
}

afterEach(() => {
  for (const q of queues.splice(0)) {
    clearTimeout(q.throttleCheckTimeoutId as NodeJS.Timeout);
    q.destroy();
  }
});

describe('kafkajs request queue (patched)', () => {
  it('keeps no timer once its last answer is in and nothing waits', () => {
    const q = queue();
    const sent: number[] = [];
    q.push(request(1, sent));
    q.fulfillRequest({ correlationId: 1, payload: Buffer.alloc(0), size: 0 });
    expect(sent).toEqual([1]);
    // Unpatched, a timer at a negative delay was set here, and set again each time it ran: every millisecond.
    expect(q.throttleCheckTimeoutId).toBeNull();
  });

  it('still sends a request queued while throttled, once the throttle ends', async () => {
    const q = queue();
    const sent: number[] = [];
    q.maybeThrottle(30);
    q.push(request(2, sent));
    expect(sent).toEqual([]);
    expect(q.pending).toHaveLength(1);
    await new Promise((r) => setTimeout(r, 80));
    expect(sent).toEqual([2]);
    expect(q.throttleCheckTimeoutId).toBeNull();
  });
});
