import { describe, expect, it } from 'vitest';
import { DomainError } from '../errors.ts';
import { listFiles, usageOf } from '../../../../test/support/files-reference.ts';
import { fileAccess, quotaLeft, visibleFile, type Caller } from './access.ts';
import { assertFileRoom, decideDeleteFile, decideDescribeFile, decideGrantFileAccess, decideRevokeFileAccess, fileDefinedFrom } from './decide.ts';
import type { FileDefinitionRequested, FileEvent } from './events.ts';
import { contentTypeFor, sanitizeFileName } from './names.ts';
import { applyFileEvent, blobKeyOf, fileEverDefined, foldFiles, type FilesState } from './state.ts';

const sha = (fill: number) => Buffer.alloc(32, fill);
const ada: Caller = { user_name: 'ada', is_admin: false };
const bob: Caller = { user_name: 'bob', is_admin: false };
const eve: Caller = { user_name: 'eve', is_admin: false };
const root: Caller = { user_name: 'root', is_admin: true };

const requested = (fileId: string, owner = 'ada', size = 100, fill = 1, at = 1000): FileDefinitionRequested => ({
  type: 'FileDefinitionRequested',
  task_id: `t-${fileId}`,
  file_id: fileId,
  user_name: owner,
  at,
  file_name: `${fileId}.csv`,
  description: `about ${fileId}`,
  content_type: 'text/csv',
  staged_object: `staging/files/${fileId}`,
  size,
  sha256: sha(fill),
  enforce_schema: false,
});
const defined = (fileId: string, owner = 'ada', size = 100, fill = 1, at = 1000): FileEvent => fileDefinedFrom(requested(fileId, owner, size, fill, at));
const meta = (caller: Caller, at = 2000) => ({ caller, at });

/** given(events).when(decide).then(events | error): each decision's contract in one line. */
function given(events: FileEvent[]) {
  const state = foldFiles(events);
  return {
    when: (decide: (s: FilesState) => FileEvent[]) => {
      let result: FileEvent[] | DomainError;
      try {
        result = decide(state);
      } catch (e) {
        result = e as DomainError;
      }
      return {
        then: (expected: FileEvent[]) => expect(result).toEqual(expected),
        thenFails: (code: DomainError['code']) => {
          expect(result, JSON.stringify(result)).toBeInstanceOf(DomainError);
          expect((result as DomainError).code).toBe(code);
        },
      };
    },
  };
}

const shared = (access: 'r' | 'rw', to = 'bob'): FileEvent => ({ type: 'FileAccessGranted', file_id: 'f1', user_name: to, access, at: 1500, actor: 'ada' });

describe('file decisions', () => {
  it('a definition becomes a fact with a content-addressed blob', () => {
    expect(defined('f1')).toMatchObject({ type: 'FileDefined', file_id: 'f1', user_name: 'ada', blob_key: `blobs/sha256/${'01'.repeat(32)}`, size: 100 });
  });

  it('the owner shares r or rw with a user; the same grant again is no event', () => {
    given([defined('f1')])
      .when((s) => decideGrantFileAccess(s, { file_id: 'f1', grantee: 'bob', access: 'r', max_grants: 10, ...meta(ada) }))
      .then([{ type: 'FileAccessGranted', file_id: 'f1', user_name: 'bob', access: 'r', at: 2000, actor: 'ada' }]);
    given([defined('f1'), shared('r')])
      .when((s) => decideGrantFileAccess(s, { file_id: 'f1', grantee: 'bob', access: 'r', max_grants: 10, ...meta(ada) }))
      .then([]);
    given([defined('f1'), shared('r')])
      .when((s) => decideGrantFileAccess(s, { file_id: 'f1', grantee: 'bob', access: 'rw', max_grants: 10, ...meta(ada) }))
      .then([{ type: 'FileAccessGranted', file_id: 'f1', user_name: 'bob', access: 'rw', at: 2000, actor: 'ada' }]);
  });

  it('sharing: only the owner or an admin; not to the owner; to any user name, existing or not', () => {
    given([defined('f1'), shared('rw')])
      .when((s) => decideGrantFileAccess(s, { file_id: 'f1', grantee: 'eve', access: 'r', max_grants: 10, ...meta(bob) }))
      .thenFails('forbidden');
    given([defined('f1')])
      .when((s) => decideGrantFileAccess(s, { file_id: 'f1', grantee: 'eve', access: 'r', max_grants: 10, ...meta(bob) }))
      .thenFails('not_found');
    given([defined('f1')])
      .when((s) => decideGrantFileAccess(s, { file_id: 'f1', grantee: 'ada', access: 'r', max_grants: 10, ...meta(ada) }))
      .thenFails('validation');
    // A name no user holds is granted like any other: the answer must not tell which users exist.
    given([defined('f1')])
      .when((s) => decideGrantFileAccess(s, { file_id: 'f1', grantee: 'ghost', access: 'r', max_grants: 10, ...meta(ada) }))
      .then([{ type: 'FileAccessGranted', file_id: 'f1', user_name: 'ghost', access: 'r', at: 2000, actor: 'ada' }]);
    given([defined('f1')])
      .when((s) => decideGrantFileAccess(s, { file_id: 'f1', grantee: 'bob', access: 'r', max_grants: 10, ...meta(root) }))
      .then([{ type: 'FileAccessGranted', file_id: 'f1', user_name: 'bob', access: 'r', at: 2000, actor: 'root' }]);
  });

  it('a file has at most max_grants grantees; changing one that is held is no new grantee', () => {
    const full = [defined('f1'), shared('r', 'bob'), shared('r', 'eve')];
    given(full)
      .when((s) => decideGrantFileAccess(s, { file_id: 'f1', grantee: 'ghost', access: 'r', max_grants: 2, ...meta(ada) }))
      .thenFails('limit_reached');
    given(full)
      .when((s) => decideGrantFileAccess(s, { file_id: 'f1', grantee: 'bob', access: 'rw', max_grants: 2, ...meta(ada) }))
      .then([{ type: 'FileAccessGranted', file_id: 'f1', user_name: 'bob', access: 'rw', at: 2000, actor: 'ada' }]);
    given([...full, { type: 'FileAccessRevoked', file_id: 'f1', user_name: 'eve', at: 1600, actor: 'ada' }])
      .when((s) => decideGrantFileAccess(s, { file_id: 'f1', grantee: 'ghost', access: 'r', max_grants: 2, ...meta(ada) }))
      .then([{ type: 'FileAccessGranted', file_id: 'f1', user_name: 'ghost', access: 'r', at: 2000, actor: 'ada' }]);
  });

  it('revokes an existing grant; a grant that does not exist is not found', () => {
    given([defined('f1'), shared('r')])
      .when((s) => decideRevokeFileAccess(s, { file_id: 'f1', grantee: 'bob', ...meta(ada) }))
      .then([{ type: 'FileAccessRevoked', file_id: 'f1', user_name: 'bob', at: 2000, actor: 'ada' }]);
    given([defined('f1')])
      .when((s) => decideRevokeFileAccess(s, { file_id: 'f1', grantee: 'bob', ...meta(ada) }))
      .thenFails('not_found');
    given([defined('f1'), shared('r')])
      .when((s) => decideRevokeFileAccess(s, { file_id: 'f1', grantee: 'bob', ...meta(bob) }))
      .thenFails('forbidden');
  });

  it('rw holders replace the description; r holders may not; outsiders do not see the file', () => {
    given([defined('f1'), shared('rw')])
      .when((s) => decideDescribeFile(s, { file_id: 'f1', description: 'new', ...meta(bob) }))
      .then([{ type: 'FileDescriptionChanged', file_id: 'f1', description: 'new', at: 2000, actor: 'bob' }]);
    given([defined('f1'), shared('r')])
      .when((s) => decideDescribeFile(s, { file_id: 'f1', description: 'new', ...meta(bob) }))
      .thenFails('forbidden');
    given([defined('f1')])
      .when((s) => decideDescribeFile(s, { file_id: 'f1', description: 'new', ...meta(eve) }))
      .thenFails('not_found');
    given([defined('f1')])
      .when((s) => decideDescribeFile(s, { file_id: 'f1', description: 'about f1', ...meta(ada) }))
      .then([]);
    given([defined('f1')])
      .when((s) => decideDescribeFile(s, { file_id: 'f1', description: 'x'.repeat(10_001), ...meta(ada) }))
      .thenFails('validation');
  });

  it('only the owner (or an admin) deletes; a deleted file is gone for everyone', () => {
    given([defined('f1'), shared('r')])
      .when((s) => decideDeleteFile(s, { file_id: 'f1', ...meta(bob) }))
      .thenFails('forbidden');
    given([defined('f1'), shared('rw')])
      .when((s) => decideDeleteFile(s, { file_id: 'f1', ...meta(bob) }))
      .thenFails('forbidden');
    given([defined('f1')])
      .when((s) => decideDeleteFile(s, { file_id: 'f1', ...meta(ada) }))
      .then([{ type: 'FileDeleted', file_id: 'f1', at: 2000, actor: 'ada' }]);
    const deleted: FileEvent = { type: 'FileDeleted', file_id: 'f1', at: 1600, actor: 'ada' };
    given([defined('f1'), deleted])
      .when((s) => decideDeleteFile(s, { file_id: 'f1', ...meta(ada) }))
      .thenFails('not_found');
    given([defined('f1'), deleted])
      .when((s) => decideDescribeFile(s, { file_id: 'f1', description: 'x', ...meta(root) }))
      .thenFails('not_found');
  });

  it("unknown and malformed ids fail exactly like someone else's file", () => {
    const state = foldFiles([defined('f1')]);
    const messages = ['f1', 'nope', '../etc/passwd'].map((id) => {
      try {
        visibleFile(state, id, eve);
        return 'visible';
      } catch (e) {
        return `${(e as DomainError).code}: ${(e as DomainError).message}`;
      }
    });
    expect(new Set(messages)).toEqual(new Set(['not_found: no such file']));
  });
});

describe('the file catalog fold', () => {
  const history: FileEvent[] = [
    defined('f1', 'ada', 100, 1, 1000),
    defined('f2', 'ada', 50, 2, 1100),
    defined('f3', 'bob', 70, 1, 1200), // same bytes as f1
    shared('r'),
    { type: 'FileAccessGranted', file_id: 'f3', user_name: 'ada', access: 'rw', at: 1300, actor: 'bob' },
  ];

  it('gives rw to owner and admins, the grant to grantees, nothing to others', () => {
    const state = foldFiles(history);
    const f1 = state.files.get('f1');
    expect([fileAccess(f1, ada), fileAccess(f1, bob), fileAccess(f1, eve), fileAccess(f1, root)]).toEqual(['rw', 'r', null, 'rw']);
    expect(fileAccess(state.files.get('f3'), ada)).toBe('rw');
  });

  it('a delete takes the file from everyone who saw it', () => {
    const state = foldFiles(history);
    applyFileEvent(state, { type: 'FileDeleted', file_id: 'f1', at: 2000, actor: 'ada' });
    expect(fileAccess(state.files.get('f1'), bob)).toBeNull();
    expect(listFiles(state, bob, { limit: 10 }).files.map((f) => f.file.file_id)).toEqual(['f3']);
    expect(blobKeyOf('01'.repeat(32))).toBe(`blobs/sha256/${'01'.repeat(32)}`);
  });

  it('ignores a second definition of an id (even after deletion), grants to the owner and events of unknown files', () => {
    const state = foldFiles([
      ...history,
      { type: 'FileDeleted', file_id: 'f1', at: 2000, actor: 'ada' },
      defined('f1', 'eve', 1, 9, 3000),
      { type: 'FileAccessGranted', file_id: 'f2', user_name: 'ada', access: 'r', at: 3000, actor: 'ada' },
      { type: 'FileDescriptionChanged', file_id: 'zz', description: 'x', at: 3000, actor: 'ada' },
    ]);
    expect(state.files.has('f1')).toBe(false);
    expect(fileEverDefined(state, 'f1')).toBe(true);
    expect(state.files.get('f2')!.grants.size).toBe(0);
    expect(usageOf(state).has('eve')).toBe(false);
  });

  it('keeps live files only: of a deleted one, its id', () => {
    const state = foldFiles([...history, { type: 'FileDeleted', file_id: 'f1', at: 2000, actor: 'ada' }]);
    expect([...state.files.keys()]).toEqual(['f2', 'f3']);
    expect([...state.deleted]).toEqual(['f1']);
    expect(state.defined).toBe(3);
    expect(listFiles(state, root, { limit: 10 }).files.map((f) => [f.file.file_id, f.file.seq])).toEqual([
      ['f3', 2],
      ['f2', 1],
    ]);
  });

  it('sweeps deleted records out of the definition order once they outnumber live ones', () => {
    const ids = Array.from({ length: 3000 }, (_, i) => `g${i}`);
    const state = foldFiles([
      ...ids.map((id) => defined(id)),
      ...ids.slice(0, 2500).map((id): FileEvent => ({ type: 'FileDeleted', file_id: id, at: 2000, actor: 'ada' })),
    ]);
    expect(state.files.size).toBe(500);
    expect(state.order.length).toBeLessThanOrEqual(2 * 500 + 1024);
    expect(state.order.filter((f) => state.files.get(f.file_id) === f).map((f) => f.seq)).toEqual(Array.from({ length: 500 }, (_, i) => 2500 + i));
    const seen: string[] = [];
    let cursor: number | undefined;
    do {
      const page = listFiles(state, root, { limit: 97, cursor });
      seen.push(...page.files.map((f) => f.file.file_id));
      cursor = page.next_cursor ?? undefined;
    } while (cursor !== undefined);
    expect(seen).toEqual(ids.slice(2500).reverse());
  });

  it('replaying the same events gives an identical catalog', () => {
    const picture = (state: ReturnType<typeof foldFiles>) =>
      JSON.stringify({
        ...state,
        files: [...state.files].map(([id, f]) => [id, { ...f, grants: [...f.grants] }]),
        order: state.order.map((f) => f.file_id),
        deleted: [...state.deleted],
      });
    expect(picture(foldFiles(history))).toBe(picture(foldFiles(history)));
  });
});

describe('listing', () => {
  const many: FileEvent[] = [
    ...Array.from({ length: 25 }, (_, i) => defined(`a${i}`, 'ada', 1, 1, 1000 + i)),
    defined('b0', 'bob', 1, 1, 5000),
    { type: 'FileAccessGranted', file_id: 'b0', user_name: 'ada', access: 'r', at: 5001, actor: 'bob' },
    { type: 'FileDeleted', file_id: 'a3', at: 6000, actor: 'ada' },
  ];
  const state = foldFiles(many);

  it("shows the caller's own and shared files, newest first, with the caller's access", () => {
    const page = listFiles(state, ada, { limit: 3 });
    expect(page.files.map((f) => [f.file.file_id, f.access])).toEqual([
      ['b0', 'r'],
      ['a24', 'rw'],
      ['a23', 'rw'],
    ]);
    expect(listFiles(state, bob, { limit: 100 }).files.map((f) => f.file.file_id)).toEqual(['b0']);
    expect(listFiles(state, eve, { limit: 100 }).files).toEqual([]);
  });

  it('pages with a cursor through every live file exactly once, for users and admins alike', () => {
    for (const caller of [ada, root]) {
      const seen: string[] = [];
      let cursor: number | undefined;
      for (;;) {
        const page = listFiles(state, caller, { limit: 7, cursor });
        seen.push(...page.files.map((f) => f.file.file_id));
        if (page.next_cursor === null) break;
        cursor = page.next_cursor;
      }
      expect(seen).toHaveLength(25); // 24 of ada's + b0
      expect(new Set(seen).size).toBe(25);
      expect(seen).not.toContain('a3');
    }
  });

  it('filters by a case-insensitive name substring', () => {
    expect(listFiles(state, ada, { limit: 100, name_contains: 'A1' }).files.map((f) => f.file.file_id)).toEqual([
      'a19',
      'a18',
      'a17',
      'a16',
      'a15',
      'a14',
      'a13',
      'a12',
      'a11',
      'a10',
      'a1',
    ]);
  });

  it('refuses one more file past the cap, pending definitions included', () => {
    const owned = (user: string) => usageOf(state).get(user)?.files ?? 0;
    expect(() => assertFileRoom({ owned: owned('ada'), pending: 0, max_files: 25 })).not.toThrow();
    const refused = (() => {
      try {
        assertFileRoom({ owned: owned('ada'), pending: 1, max_files: 25 });
      } catch (e) {
        return e as DomainError;
      }
      return null;
    })();
    expect(refused?.code).toBe('limit_reached');
    expect(refused?.message).toContain('MERIDIAN_MAX_FILES_PER_USER');
    expect(() => assertFileRoom({ owned: owned('eve'), pending: 0, max_files: 1 })).not.toThrow();
  });

  it('leaves the quota less usage and pending bytes, never below zero', () => {
    expect(quotaLeft(24, 100, 10)).toBe(100 - 24 - 10);
    expect(quotaLeft(24, 10, 10)).toBe(0);
    expect(quotaLeft(0, 10, 0)).toBe(10);
  });
});

describe('names and types', () => {
  it.each([
    ['report.csv', 'report.csv'],
    ['C:\\Users\\ada\\secret.txt', 'secret.txt'],
    ['../../etc/passwd', 'passwd'],
    ['a\r\nb\u0000c.csv', 'abc.csv'],
    ['evil\u202egpj.exe', 'evilgpj.exe'],
    ['..', 'file'],
    ['', 'file'],
    [null, 'file'],
    ['résumé "final".csv', 'résumé "final".csv'],
    ['x'.repeat(300), 'x'.repeat(255)],
  ])('sanitizes %j to %j', (raw, expected) => expect(sanitizeFileName(raw)).toBe(expected));

  it.each([
    ['text/csv', 'a.bin', 'text/csv'],
    ['application/octet-stream', 'a.CSV', 'text/csv'],
    [null, 'a.ndjson', 'application/x-ndjson'],
    ['text/html; charset=utf-8', 'a.json', 'application/json'],
    ['bogus', 'noext', 'application/octet-stream'],
  ])('serves %j named %j as %j', (declared, name, expected) => expect(contentTypeFor(declared, name)).toBe(expected));
});
