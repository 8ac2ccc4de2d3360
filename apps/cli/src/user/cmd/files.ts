import { parseCommand, UserUsageError } from '../args.ts';
import { deleteFile, fileInfo, getFile, listFiles, putFile, shareFile } from '../files.ts';
import { rethrowIfInterrupted } from '../interrupt.ts';
import { clientFor, print, progressFor, type UserIo } from '../io.ts';

/** meridian files ls | info | get | put | rm | share. */
export async function files(args: string[], io: UserIo): Promise<number> {
  const [verb, ...rest] = args;
  const command = `files ${verb ?? ''}`;
  switch (verb) {
    case 'ls':
      return filesLs(command, rest, io);
    case 'info':
      return filesInfo(command, rest, io);
    case 'get':
      return filesGet(command, rest, io);
    case 'put':
      return filesPut(command, rest, io);
    case 'rm':
      return filesRm(command, rest, io);
    case 'share':
      return filesShare(command, rest, io);
    default:
      throw new UserUsageError(verb ? `unknown files command: ${verb}` : 'files needs ls, info, get, put, rm or share', 'files');
  }
}

/** meridian files ls. */
async function filesLs(command: string, rest: string[], io: UserIo): Promise<number> {
  const { values } = parseCommand(command, rest, { 'name-contains': { type: 'string' } });
  const list = await listFiles(await clientFor(values, io), values['name-contains']);
  if (values.json) print(io, JSON.stringify(list));
  else
    print(
      io,
      list.length === 0 ? 'no files' : list.map((f) => [f.file_id, f.entitlement.padEnd(2), f.user_name, f.created_at, f.file_name].join('  ')).join('\n'),
    );
  return 0;
}

/** meridian files info. */
async function filesInfo(command: string, rest: string[], io: UserIo): Promise<number> {
  const usage = (message: string) => new UserUsageError(message, command);
  const { values, positionals } = parseCommand(command, rest, {});
  if (positionals.length !== 1) throw usage('files info needs exactly one file id');
  const info = await fileInfo(await clientFor(values, io), positionals[0]!);
  if (values.json) print(io, JSON.stringify(info));
  else {
    const shared = info.shared_with === undefined ? [] : [`shared with  ${info.shared_with.map((g) => `${g.user_name} (${g.access})`).join(', ') || '-'}`];
    print(
      io,
      [
        `file_id      ${info.file_id}`,
        `name         ${info.file_name}`,
        `description  ${info.file_description}`,
        `size         ${info.size} bytes`,
        `sha256       ${info.sha256}`,
        `type         ${info.content_type}`,
        `owner        ${info.user_name}`,
        `created      ${info.created_at}`,
        `your access  ${info.entitlement}`,
        ...shared,
      ].join('\n'),
    );
  }
  return 0;
}

/** meridian files get. */
async function filesGet(command: string, rest: string[], io: UserIo): Promise<number> {
  const usage = (message: string) => new UserUsageError(message, command);
  const { values, positionals } = parseCommand(command, rest, { output: { type: 'string', short: 'o' }, force: { type: 'boolean' } });
  if (positionals.length !== 1) throw usage('files get needs exactly one file id');
  const progress = progressFor(io, values.json || values.output === '-');
  const got = await getFile(await clientFor(values, io), positionals[0]!, values.output, values.force ?? false, progress).catch((error: unknown) =>
    rethrowIfInterrupted(io.signal, error, 'nothing was written'),
  );
  progress.stop();
  if (values.json) print(io, JSON.stringify(got));
  else if (got.output !== '-') io.stderr.write(`${got.output}: ${got.bytes} bytes\n`);
  return 0;
}

/** meridian files put. */
async function filesPut(command: string, rest: string[], io: UserIo): Promise<number> {
  const usage = (message: string) => new UserUsageError(message, command);
  const { values, positionals } = parseCommand(command, rest, { description: { type: 'string' } });
  if (positionals.length !== 1) throw usage('files put needs exactly one file');
  const progress = progressFor(io, values.json);
  const { file_id, task } = await putFile(
    await clientFor(values, io),
    positionals[0]!,
    values.description,
    io.settings.MERIDIAN_CLI_TASK_WAIT_SECONDS,
    progress,
  );
  progress.stop();
  if (values.json) print(io, JSON.stringify({ file_id, status: task.status, reason: task.reason }));
  else print(io, task.status === 'succeeded' ? file_id : `${positionals[0]}  failed: ${task.reason ?? ''}`);
  return task.status === 'succeeded' ? 0 : 1;
}

/** meridian files rm. */
async function filesRm(command: string, rest: string[], io: UserIo): Promise<number> {
  const usage = (message: string) => new UserUsageError(message, command);
  const { values, positionals } = parseCommand(command, rest, {});
  if (positionals.length === 0) throw usage('files rm needs at least one file id');
  const client = await clientFor(values, io);
  // One at a time, each said as it is done: a refusal stops the rest (exit 1), as rm does not.
  for (const id of positionals) {
    await deleteFile(client, id);
    if (!values.json) print(io, `deleted ${id}`);
  }
  if (values.json) print(io, JSON.stringify({ deleted: positionals }));
  return 0;
}

/** meridian files share. */
async function filesShare(command: string, rest: string[], io: UserIo): Promise<number> {
  const usage = (message: string) => new UserUsageError(message, command);
  const { values, positionals } = parseCommand(command, rest, { access: { type: 'string' }, revoke: { type: 'boolean' } });
  if (positionals.length !== 2) throw usage('files share needs a file id and a user name');
  if (values.revoke === (values.access !== undefined)) throw usage('files share needs either --access r|rw or --revoke');
  if (values.access !== undefined && values.access !== 'r' && values.access !== 'rw') throw usage('--access is r or rw');
  const answer = await shareFile(await clientFor(values, io), positionals[0]!, positionals[1]!, values.revoke ? null : (values.access as 'r' | 'rw'));
  if (values.json) print(io, JSON.stringify(answer ?? { revoked: true }));
  else
    print(
      io,
      values.revoke ? `${positionals[1]} no longer has access to ${positionals[0]}` : `${positionals[1]} has ${values.access} access to ${positionals[0]}`,
    );
  return 0;
}
