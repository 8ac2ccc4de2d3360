import type { Access } from '../accounts/events.ts';
import { DomainError, forbidden, notFound, validationError } from '../errors.ts';
import { visibleFile, type Caller } from './access.ts';
import { blobKeyOf, type FilesState } from './state.ts';
import type { FileDefined, FileDefinitionRequested, FileEvent } from './events.ts';
import { descriptionProblem } from './names.ts';

/**
 * File commands: each takes the catalog and a command (with its time and caller) and returns
 * the events to append, or throws a DomainError. A file the caller cannot see is "not
 * found"; one they can see but may not change is "forbidden".
 */
type Meta = { readonly at: number; readonly caller: Caller };

const isOwnerOrAdmin = (owner: string, caller: Caller) => caller.is_admin || owner === caller.user_name;

export function decideDescribeFile(state: FilesState, cmd: Meta & { file_id: string; description: string }): FileEvent[] {
  const { file, access } = visibleFile(state, cmd.file_id, cmd.caller);
  if (access !== 'rw') throw forbidden('replacing the description needs rw access to the file');
  const problem = descriptionProblem(cmd.description);
  if (problem) throw validationError(`invalid file_description: ${problem}`, [{ field: 'body.file_description', reason: problem }]);
  if (file.description === cmd.description) return [];
  return [{ type: 'FileDescriptionChanged', file_id: file.file_id, description: cmd.description, at: cmd.at, actor: cmd.caller.user_name }];
}

/**
 * The owner (or an admin) gives a user name r or rw. Granting what the name has already is no
 * event; the owner cannot be a grantee. Whether a user of that name exists or is disabled is
 * not asked: the grant is recorded all the same, so the answer (and the file's shared_with
 * later) cannot tell a caller which users exist. It gives access to no one while no enabled
 * user holds the name. A file has at most `max_grants` grantees (MERIDIAN_MAX_GRANTS_PER_FILE).
 */
export function decideGrantFileAccess(state: FilesState, cmd: Meta & { file_id: string; grantee: string; access: Access; max_grants: number }): FileEvent[] {
  const { file } = visibleFile(state, cmd.file_id, cmd.caller);
  if (!isOwnerOrAdmin(file.owner, cmd.caller)) throw forbidden('only the owner shares a file');
  if (cmd.grantee === file.owner) throw validationError('the owner always has rw access', [{ field: 'path.user_name', reason: 'is the owner' }]);
  if (file.grants.get(cmd.grantee) === cmd.access) return [];
  // Names are not looked up, so grants to made-up names would otherwise grow every process's fold without bound.
  if (!file.grants.has(cmd.grantee) && file.grants.size >= cmd.max_grants) {
    throw new DomainError('limit_reached', `at most ${cmd.max_grants} users per file (MERIDIAN_MAX_GRANTS_PER_FILE); revoke one first`, [
      { field: 'MERIDIAN_MAX_GRANTS_PER_FILE', reason: `${file.grants.size} of ${cmd.max_grants} grants held` },
    ]);
  }
  return [{ type: 'FileAccessGranted', file_id: file.file_id, user_name: cmd.grantee, access: cmd.access, at: cmd.at, actor: cmd.caller.user_name }];
}

export function decideRevokeFileAccess(state: FilesState, cmd: Meta & { file_id: string; grantee: string }): FileEvent[] {
  const { file } = visibleFile(state, cmd.file_id, cmd.caller);
  if (!isOwnerOrAdmin(file.owner, cmd.caller)) throw forbidden('only the owner changes who may see a file');
  if (!file.grants.has(cmd.grantee)) throw notFound(`${JSON.stringify(cmd.grantee)} has no access to this file`);
  return [{ type: 'FileAccessRevoked', file_id: file.file_id, user_name: cmd.grantee, at: cmd.at, actor: cmd.caller.user_name }];
}

export function decideDeleteFile(state: FilesState, cmd: Meta & { file_id: string }): FileEvent[] {
  const { file } = visibleFile(state, cmd.file_id, cmd.caller);
  if (!isOwnerOrAdmin(file.owner, cmd.caller)) throw forbidden('only the owner deletes a file');
  return [{ type: 'FileDeleted', file_id: file.file_id, at: cmd.at, actor: cmd.caller.user_name }];
}

/** The fact a successful definition writes: everything from the command, the blob at its content address. */
export function fileDefinedFrom(cmd: FileDefinitionRequested): FileDefined {
  return {
    type: 'FileDefined',
    file_id: cmd.file_id,
    task_id: cmd.task_id,
    user_name: cmd.user_name,
    at: cmd.at,
    file_name: cmd.file_name,
    description: cmd.description,
    content_type: cmd.content_type,
    size: cmd.size,
    sha256: cmd.sha256,
    blob_key: blobKeyOf(cmd.sha256.toString('hex')),
  };
}

/**
 * Refuses a new file definition to an owner who holds `max_files` files already: live ones
 * (`owned`) plus `pending` definitions still in progress (409 /problems/limit-reached: deleting a
 * file makes room). The limit is the caller's setting (MERIDIAN_MAX_FILES_PER_USER).
 */
export function assertFileRoom(cmd: { owned: number; pending: number; max_files: number }): void {
  const held = cmd.owned + cmd.pending;
  if (held >= cmd.max_files) {
    throw new DomainError(
      'limit_reached',
      `at most ${cmd.max_files} files per user (MERIDIAN_MAX_FILES_PER_USER), definitions in progress included; delete one first`,
      [{ field: 'MERIDIAN_MAX_FILES_PER_USER', reason: `${held} of ${cmd.max_files} files held` }],
    );
  }
}
