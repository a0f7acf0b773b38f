/**
 * A peer's refusal becomes this member's error (issue 33, item 4): a code naming a row of etcd's table is
 * rethrown as that EtcdError; anything else, prototype keys included, stays a plain Error with the peer's text.
 */
import { describe, expect, it } from 'vitest';
import { EtcdError, etcdErrors, peerRefusal } from '../../src/node/errors.js';

describe('peerRefusal', () => {
  it('rethrows a known code as the same etcd error', () => {
    const e = peerRefusal({ error: 'whatever the peer said', code: 'memberNotFound' });
    expect(e).toBeInstanceOf(EtcdError);
    expect((e as EtcdError).code).toBe('memberNotFound');
    expect(e.message).toBe(etcdErrors.memberNotFound.message);
  });

  it.each(['toString', 'constructor', '__proto__', 'hasOwnProperty', 'valueOf', 'no such code'])(
    'keeps %s as a plain error',
    (code) => {
      const e = peerRefusal({ error: 'peer text', code });
      expect(e).not.toBeInstanceOf(EtcdError);
      expect(e.message).toBe('peer text');
    },
  );

  it('keeps a missing or non-string code as a plain error', () => {
    expect(peerRefusal({ error: 'x' })).not.toBeInstanceOf(EtcdError);
    expect(peerRefusal({ error: 'x', code: 7 })).not.toBeInstanceOf(EtcdError);
  });
});
