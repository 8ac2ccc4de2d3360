import type { LogRecord, TaskEvent } from '@meridian/domain';
import { createEventCodec } from '@meridian/events';
import { describe, expect, it } from 'vitest';
import { announceProjected } from './announce.ts';

describe('announceProjected', () => {
  it('announces the seals of several uploads in one request, one event per task and partition, keyed by its task', async () => {
    const codec = createEventCodec<TaskEvent>();
    const sent: LogRecord[] = [];
    const producer = {
      send: async (record: LogRecord) => {
        sent.push(record);
        return [];
      },
    };
    await announceProjected(
      producer,
      codec,
      'tasks',
      [
        { task_id: 'a', partition: 0, offset: 10 },
        { task_id: 'b', partition: 1, offset: 4 },
        { task_id: 'a', partition: 2, offset: 7 },
        { task_id: 'a', partition: 0, offset: 12 }, // the same task and partition again: announced once
      ],
      () => 1,
    );
    expect(sent).toHaveLength(1);
    expect(sent[0]!.messages.map((m) => [m.key, codec.decode(m.value!)])).toEqual([
      ['a', { type: 'UploadSegmentProjected', task_id: 'a', partition: 0, at: 1 }],
      ['a', { type: 'UploadSegmentProjected', task_id: 'a', partition: 2, at: 1 }],
      ['b', { type: 'UploadSegmentProjected', task_id: 'b', partition: 1, at: 1 }],
    ]);
  });

  it('sends nothing for no seals', async () => {
    const sent: LogRecord[] = [];
    await announceProjected(
      {
        send: async (r: LogRecord) => {
          sent.push(r);
          return [];
        },
      },
      createEventCodec<TaskEvent>(),
      'tasks',
      [],
    );
    expect(sent).toHaveLength(0);
  });
});
