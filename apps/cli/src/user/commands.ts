import { UserUsageError } from './args.ts';
import { deleteCommand } from './cmd/delete.ts';
import { downloadCommand } from './cmd/download.ts';
import { files } from './cmd/files.ts';
import { metrics } from './cmd/metrics.ts';
import { retention } from './cmd/retention.ts';
import { tasks } from './cmd/tasks.ts';
import { upload } from './cmd/upload.ts';
import type { UserIo } from './io.ts';

export { UserUsageError } from './args.ts';
export type { UserIo } from './io.ts';

/** The commands that talk HTTP to the api with an API key (the others talk to Kafka). */
export const USER_COMMANDS = new Set(['upload', 'download', 'delete', 'tasks', 'files', 'metrics', 'retention']);

/** Runs a user command; returns the exit code (0 done, 1 a task failed or the api refused). */
export async function runUserCommand(argv: readonly string[], io: UserIo): Promise<number> {
  const [command, ...args] = argv;
  switch (command) {
    case 'upload':
      return upload(args, io);
    case 'download':
      return downloadCommand(args, io);
    case 'delete':
      return deleteCommand(args, io);
    case 'tasks':
      return tasks(args, io);
    case 'files':
      return files(args, io);
    case 'metrics':
      return metrics(args, io);
    case 'retention':
      return retention(args, io);
    default:
      throw new UserUsageError(`unknown command: ${command}`);
  }
}
