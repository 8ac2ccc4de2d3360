const USER_NAME = /^[A-Za-z0-9._-]{1,64}$/;

/** User names: 1 to 64 letters, digits, `.`, `_`, `-`. Returns why a name is invalid, or null. */
export function userNameProblem(name: unknown): string | null {
  if (typeof name !== 'string') return 'must be a string';
  return USER_NAME.test(name) ? null : 'must be 1 to 64 characters of letters, digits, ".", "_" or "-"';
}
