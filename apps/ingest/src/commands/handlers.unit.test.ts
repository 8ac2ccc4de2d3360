import { describe, expect, it } from 'vitest';
import type { ConsumedPosition, LogRecord, LogTransaction, TaskEvent, TransactionalLog } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { createLogger } from '@meridian/observability';
import { FAST_RETRY } from '@meridian/retry';
import { handlerOf, runCommand, taskLog, type CommandHandler, type CommandHandlers, type CommandRun, type WorkerCommand } from './handlers.ts';

const handler = (): CommandHandler<WorkerCommand> => ({ run: async () => undefined, refuse: async () => undefined });

describe('the command registry', () => {
  const handlers: CommandHandlers = { MetricsUploadRequested: handler(), FileDefinitionRequested: handler() };

  it('finds the handler of each command type', () => {
    expect(handlerOf(handlers, 'MetricsUploadRequested')).toBe(handlers.MetricsUploadRequested);
    expect(handlerOf(handlers, 'FileDefinitionRequested')).toBe(handlers.FileDefinitionRequested);
  });

  it("has none for the lifecycle events, a rebuild, or a name that only an object's prototype holds", () => {
    for (const type of ['TaskStarted', 'UploadParsed', 'TaskFailed', 'RebuildRequested', 'toString', '__proto__', 'constructor'])
      expect(handlerOf(handlers, type), type).toBeUndefined();
  });
});

describe('runCommand: the one rule for a failed run, for every handler', () => {
  const codec = createEventCodec<TaskEvent>();
  const tasks = taskLog('t.tasks', codec, 't.commands');
  const logger = createLogger({ name: 'test', level: 'silent' });
  const rule = { attempts: 3, logger, what: 'the thing could not be done', policy: FAST_RETRY };

  /** A producer whose transactions record what they commit, a run that records what it sets aside. */
  function fakes() {
    const committed: Array<{ events: TaskEvent[]; moved: unknown[] }> = [];
    const setAside: string[] = [];
    const producer: TransactionalLog = {
      async transaction() {
        const events: TaskEvent[] = [];
        const moved: unknown[] = [];
        let active = true;
        const tx: LogTransaction = {
          async send(record: LogRecord) {
            for (const m of record.messages) events.push(codec.decode(m.value as Buffer));
            return [];
          },
          async sendAll(records: readonly LogRecord[]) {
            for (const r of records) await tx.send(r);
            return [];
          },
          async commitConsumed(group: string, at: ConsumedPosition) {
            moved.push({ group, ...at });
          },
          async commit() {
            active = false;
            committed.push({ events, moved });
          },
          async abort() {
            active = false;
          },
          isActive: () => active,
        };
        return tx;
      },
    };
    const run: CommandRun = {
      at: { topic: 't.tasks', partition: 2, offset: 7 },
      producer,
      heartbeat: async () => undefined,
      setAside: async (reason) => {
        setAside.push(reason);
      },
    };
    return { committed, setAside, run };
  }

  it('retries storage trouble within the run and, past its attempts, sets the command aside, fails its task with the offset, then cleans up', async () => {
    const { committed, setAside, run } = fakes();
    let attempts = 0;
    let cleaned = false;
    await runCommand(
      'task-1',
      run,
      tasks,
      rule,
      async () => {
        attempts++;
        throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
      },
      async () => {
        cleaned = true;
      },
    );
    expect(attempts).toBe(3);
    expect(setAside).toEqual(['connect ECONNREFUSED']);
    expect(committed).toEqual([
      {
        events: [
          expect.objectContaining({
            type: 'TaskFailed',
            task_id: 'task-1',
            reason: 'the thing could not be done: connect ECONNREFUSED',
            rows_total: 0,
            rows_rejected: 0,
            errors: [],
          }),
        ],
        moved: [{ group: 't.commands', topic: 't.tasks', partition: 2, offset: 7 }],
      },
    ]);
    expect(cleaned).toBe(true);
  });

  it('succeeds on a later attempt without failing anything', async () => {
    const { committed, setAside, run } = fakes();
    let attempts = 0;
    await runCommand('task-2', run, tasks, rule, async () => {
      if (++attempts < 2) throw Object.assign(new Error('S3'), { code: 'SlowDown' });
    });
    expect([attempts, committed, setAside]).toEqual([2, [], []]);
  });

  it("fails a final error at once, and throws Kafka's trouble for redelivery without failing the task", async () => {
    const final = fakes();
    let attempts = 0;
    await runCommand('task-3', final.run, tasks, rule, async () => {
      attempts++;
      throw new TypeError('x is not a function');
    });
    expect(attempts).toBe(1);
    expect(final.setAside).toEqual(['x is not a function']);
    expect(final.committed).toHaveLength(1);

    const kafka = fakes();
    const cut = Object.assign(new Error('the commit failed on its way'), { name: 'TransactionOutcomeUnknown', retriable: true });
    await expect(
      runCommand('task-4', kafka.run, tasks, rule, async () => {
        throw cut;
      }),
    ).rejects.toBe(cut);
    expect([kafka.committed, kafka.setAside]).toEqual([[], []]);
  });
});
