import type { Access } from '../accounts/events.ts';

/**
 * File events (schemas/<type>/v<N>.avsc). The command and the task's success travel on the
 * tasks topic keyed by task_id, beside the other task events; the file facts on the files
 * topic keyed by file_id, whose fold is the file catalog.
 */

/** The command, on the tasks topic: the task is queued from here. The bytes are staged already. */
export type FileDefinitionRequested = {
  readonly type: 'FileDefinitionRequested';
  readonly task_id: string;
  readonly file_id: string;
  readonly user_name: string;
  readonly at: number;
  readonly file_name: string;
  readonly description: string;
  readonly content_type: string;
  readonly staged_object: string;
  readonly size: number;
  readonly sha256: Buffer;
  readonly enforce_schema: boolean;
};

/** The task's success, written with FileDefined in one Kafka transaction (tasks topic). */
export type FileDefinitionSucceeded = {
  readonly type: 'FileDefinitionSucceeded';
  readonly task_id: string;
  readonly file_id: string;
  readonly size: number;
  readonly sha256: Buffer;
  readonly at: number;
};

type Meta = { readonly at: number; readonly actor: string };

/** A file exists: the fact the catalog is folded from (files topic). */
export type FileDefined = {
  readonly type: 'FileDefined';
  readonly file_id: string;
  readonly task_id: string;
  /** The owner. */
  readonly user_name: string;
  readonly at: number;
  readonly file_name: string;
  readonly description: string;
  readonly content_type: string;
  readonly size: number;
  readonly sha256: Buffer;
  readonly blob_key: string;
};
export type FileDescriptionChanged = Meta & { readonly type: 'FileDescriptionChanged'; readonly file_id: string; readonly description: string };
export type FileAccessGranted = Meta & { readonly type: 'FileAccessGranted'; readonly file_id: string; readonly user_name: string; readonly access: Access };
export type FileAccessRevoked = Meta & { readonly type: 'FileAccessRevoked'; readonly file_id: string; readonly user_name: string };
export type FileDeleted = Meta & { readonly type: 'FileDeleted'; readonly file_id: string };

export type FileEvent = FileDefined | FileDescriptionChanged | FileAccessGranted | FileAccessRevoked | FileDeleted;
