import { describe, expect, it } from 'vitest';
import { isValidPermissionRange, RangePerms } from '../../src/auth/range-perms.js';
import { PermType, type Permission } from '../../src/auth/types.js';

const b = (s: string): Uint8Array => Buffer.from(s, 'latin1');
const perm = (permType: PermType, key: string, rangeEnd = ''): Permission => ({ permType, key: b(key), rangeEnd: b(rangeEnd) });
const role = (...keyPermission: Permission[]) => ({ name: 'r', keyPermission });

describe('RangePerms (etcd range_perm_cache)', () => {
  const perms = new RangePerms([
    role(perm(PermType.Read, 'a', 'c'), perm(PermType.Read, 'x')),
    role(perm(PermType.ReadWrite, 'c', 'e'), perm(PermType.Write, 'zz', '\0')),
  ]);
  const cases: Array<[string, typeof PermType.Read | typeof PermType.Write, string, string, boolean]> = [
    ['a point inside a range', PermType.Read, 'b', '', true],
    ['the end of a range is outside it', PermType.Read, 'e', '', false],
    ['touching ranges of two roles cover their union', PermType.Read, 'b', 'd', true],
    ['a gap between ranges is not covered', PermType.Read, 'b', 'y', false],
    ['a single-key permission covers that key', PermType.Read, 'x', '', true],
    ['a single-key permission covers [key, key\\0)', PermType.Read, 'x', 'x\0', true],
    ['a single-key permission does not cover a longer key', PermType.Read, 'xa', '', false],
    ['read does not imply write', PermType.Write, 'a', '', false],
    ['readwrite grants write', PermType.Write, 'c', 'e', true],
    ['write does not imply read', PermType.Read, 'zz', '', false],
    ['an open-ended permission covers an open-ended request', PermType.Write, 'zzz', '\0', true],
    ['an open-ended request is not covered by a bounded range', PermType.Read, 'c', '\0', false],
    ['a request starting before every permission', PermType.Read, '', '', false],
  ];
  for (const [name, type, key, end, want] of cases) {
    it(`${name}: ${type === PermType.Read ? 'read' : 'write'} [${JSON.stringify(key)}, ${JSON.stringify(end)}) → ${want}`, () => {
      expect(perms.permits(type, b(key), b(end))).toBe(want);
    });
  }

  it('a user without roles may do nothing', () => {
    expect(new RangePerms([]).permits(PermType.Read, b('a'), b(''))).toBe(false);
  });

  it('validates permission ranges as etcd: a key is needed, the end lies after it or is "\\0"', () => {
    expect(isValidPermissionRange(b(''), b(''))).toBe(false);
    expect(isValidPermissionRange(b('a'), b(''))).toBe(true);
    expect(isValidPermissionRange(b('a'), b('\0'))).toBe(true);
    expect(isValidPermissionRange(b('b'), b('a'))).toBe(false);
    expect(isValidPermissionRange(b('a'), b('a'))).toBe(false);
    expect(isValidPermissionRange(b('b'), b('\0a'))).toBe(true);
  });
});
