import { describe, expect, it } from 'vitest';
import { handlerOf, type CommandHandler, type CommandHandlers, type WorkerCommand } from './handlers.ts';

const handler = (): CommandHandler<WorkerCommand> => ({ run: async () => undefined, refuse: async () => undefined });

describe('the command registry', () => {
  const handlers: CommandHandlers = { MetricsUploadRequested: handler(), FileDefinitionRequested: handler() };

  it('finds the handler of each command type', () => {
    expect(handlerOf(handlers, 'MetricsUploadRequested')).toBe(handlers.MetricsUploadRequested);
    expect(handlerOf(handlers, 'FileDefinitionRequested')).toBe(handlers.FileDefinitionRequested);
  });

  it('has none for the lifecycle events, a rebuild, or a name that only an object\'s prototype holds', () => {
    for (const type of ['TaskStarted', 'UploadParsed', 'TaskFailed', 'RebuildRequested', 'toString', '__proto__', 'constructor']) expect(handlerOf(handlers, type), type).toBeUndefined();
  });
});
