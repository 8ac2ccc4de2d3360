import type { RetentionEvent } from '../retention/rules.ts';
/** Account events, as written to the accounts topic (schemas/<type>/v<N>.avsc), keyed by user name. */
export type MetricMatch = 'exact' | 'prefix';
export type Access = 'r' | 'rw';

type Meta = { readonly at: number; readonly actor: string };

/** Carries the first key: creation and first key are one atomic fact. */
export type UserCreated = Meta & {
  readonly type: 'UserCreated';
  readonly user_name: string;
  readonly is_admin: boolean;
  readonly key_id: string;
  readonly secret_sha256: Buffer;
};
export type UserDisabled = Meta & { readonly type: 'UserDisabled'; readonly user_name: string };
export type ApiKeyIssued = Meta & { readonly type: 'ApiKeyIssued'; readonly user_name: string; readonly key_id: string; readonly secret_sha256: Buffer };
export type ApiKeyRevoked = Meta & { readonly type: 'ApiKeyRevoked'; readonly user_name: string; readonly key_id: string };
export type MetricEntitlementGranted = Meta & {
  readonly type: 'MetricEntitlementGranted';
  readonly user_name: string;
  readonly match: MetricMatch;
  readonly value: string;
  readonly access: Access;
};
export type MetricEntitlementRevoked = Meta & {
  readonly type: 'MetricEntitlementRevoked';
  readonly user_name: string;
  readonly match: MetricMatch;
  readonly value: string;
};

/** null: the user goes back to the default quota (MERIDIAN_FILE_QUOTA_BYTES). */
export type FileQuotaSet = Meta & { readonly type: 'FileQuotaSet'; readonly user_name: string; readonly quota_bytes: number | null };

export type AccountEvent =
  UserCreated | UserDisabled | ApiKeyIssued | ApiKeyRevoked | MetricEntitlementGranted | MetricEntitlementRevoked | FileQuotaSet | RetentionEvent;
