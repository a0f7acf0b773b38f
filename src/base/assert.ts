/**
 * Invariant checks. A broken invariant is a programmer error: we crash rather than carry on with a state
 * we do not understand (TigerBeetle's rule). Expected outcomes are typed errors, never assertions.
 */
export class AssertionError extends Error {
  override name = 'AssertionError';
}

export function assert(condition: unknown, message = 'assertion failed'): asserts condition {
  if (!condition) throw new AssertionError(message);
}

export function unreachable(value: never, message = 'unreachable'): never {
  throw new AssertionError(`${message}: ${String(value)}`);
}

/** Terms, indexes and revisions are plain numbers; they must stay exact integers. */
export function assertSafeInteger(n: number, what: string): void {
  if (!Number.isSafeInteger(n) || n < 0) throw new AssertionError(`${what} must be a non-negative safe integer, got ${n}`);
}
