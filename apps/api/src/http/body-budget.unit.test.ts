import { EventEmitter } from 'node:events';
import type { Context } from 'koa';
import { describe, expect, it } from 'vitest';
import { DomainError } from '@meridian/domain';
import { BodyBudget } from './body-budget.ts';

/** A request declaring `length` bytes (none: no Content-Length), whose response `close`s when told. */
function request(length?: number) {
  const res = Object.assign(new EventEmitter(), { closed: false });
  const ctx = { get: (name: string) => (name === 'Content-Length' && length !== undefined ? String(length) : ''), res } as unknown as Context;
  return {
    ctx,
    close: () => {
      res.closed = true;
      res.emit('close');
    },
  };
}

const settled = async (p: Promise<unknown>) => {
  let state = 'pending';
  p.then(
    () => (state = 'granted'),
    () => (state = 'refused'),
  );
  await new Promise((r) => setTimeout(r, 5));
  return state;
};

describe('BodyBudget', () => {
  it('reserves the declared length (else the limit) until the response closes, once', async () => {
    const budget = new BodyBudget(1000, 1000);
    const a = request(300);
    await budget.holdWhileResponding(a.ctx, 800, 'u1');
    const b = request();
    await budget.holdWhileResponding(b.ctx, 500, 'u2');
    expect(budget.held).toBe(800);
    a.close();
    a.close();
    expect(budget.held).toBe(500);
    b.close();
    expect(budget.held).toBe(0);
  });

  it('lets waiters in first come first served as room is made, a large one holding the small ones behind it', async () => {
    const budget = new BodyBudget(1000, 1000);
    const first = request(900);
    await budget.holdWhileResponding(first.ctx, 1000, 'u3');
    const large = budget.holdWhileResponding(request(600).ctx, 1000, 'u4');
    const small = budget.holdWhileResponding(request(50).ctx, 1000, 'u5');
    expect(await settled(large)).toBe('pending');
    expect(await settled(small)).toBe('pending');
    expect(budget.waiting).toBe(2);
    first.close();
    expect(await settled(large)).toBe('granted');
    expect(await settled(small)).toBe('granted');
    expect(budget.held).toBe(650);
  });

  it('refuses with unavailable naming the setting past the wait, and lets the next one in', async () => {
    const budget = new BodyBudget(1000, 30);
    const first = request(1000);
    await budget.holdWhileResponding(first.ctx, 1000, 'u6');
    const refused = await budget.holdWhileResponding(request(10).ctx, 1000, 'u7').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(DomainError);
    expect((refused as DomainError).code).toBe('unavailable');
    expect((refused as DomainError).message).toContain('MERIDIAN_BODY_BYTES_IN_FLIGHT');
    expect(budget.waiting).toBe(0);
    expect(budget.held).toBe(1000);
  });

  it('forgets a waiter whose client went away, and what it would have held', async () => {
    const budget = new BodyBudget(1000, 1000);
    const first = request(1000);
    await budget.holdWhileResponding(first.ctx, 1000, 'u8');
    const gone = request(500);
    const waiting = budget.holdWhileResponding(gone.ctx, 1000, 'u9').catch((e: unknown) => e);
    gone.close();
    expect(await waiting).toBeInstanceOf(DomainError);
    expect(budget.waiting).toBe(0);
    first.close();
    expect(budget.held).toBe(0);
  });

  it("refuses a user's body past half the budget beside their first, at once, and counts it back on answer", async () => {
    const budget = new BodyBudget(1000, 1000);
    const first = request(400);
    await budget.holdWhileResponding(first.ctx, 1000, 'ada');
    const refused = await budget.holdWhileResponding(request(200).ctx, 1000, 'ada').catch((e: unknown) => e);
    expect((refused as DomainError).code).toBe('too_many');
    expect(budget.waiting).toBe(0);
    await budget.holdWhileResponding(request(100).ctx, 1000, 'ada');
    await budget.holdWhileResponding(request(400).ctx, 1000, 'bob');
    first.close();
    await budget.holdWhileResponding(request(300).ctx, 1000, 'ada');
    expect(budget.held).toBe(800);
  });

  it('takes nothing for a body declared past its limit: its route refuses it at once', async () => {
    const budget = new BodyBudget(1000, 1000);
    await budget.holdWhileResponding(request(1000).ctx, 1000, 'ada');
    expect(await settled(budget.holdWhileResponding(request(5000).ctx, 1000, 'bob'))).toBe('granted');
    expect(budget.held).toBe(1000);
  });
});
